package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentserver/internal/testutil/pgtest"
)

// TestDiskFullAnswers507 runs the server on a 4 MiB file system (a tmpfs
// mounted in a private user and mount namespace) and fills it through the
// store: the write that does not fit is answered 507 with a JSON error
// naming the cause, and what was written before still reads back. Where
// namespaces are not available the test is skipped; TestFullDiskIsErrNoSpace
// (internal/storage) covers the mapping everywhere.
func TestDiskFullAnswers507(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	if pgtest.Enabled() {
		t.Skip("the data directory on the tiny disk holds no database on PostgreSQL; storage's TestFullDiskIsErrNoSpace covers disk_full there")
	}
	if err := exec.Command("unshare", "-Urm", "true").Run(); err != nil {
		t.Skipf("no user and mount namespaces here: %v", err)
	}
	dataDir := t.TempDir()
	p := startProcess(t, onTinyDisk(t, buildServer(t), dataDir), dataDir)
	client := &http.Client{Timeout: 10 * time.Second}
	put := func(key string) (int, []byte) {
		body, _ := json.Marshal(map[string]any{"namespace": []string{"fill"}, "key": key, "value": map[string]any{"blob": strings.Repeat("x", 256<<10)}})
		req, _ := http.NewRequest("PUT", p.url+"/store/items", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.Bytes()
	}
	var status int
	var raw []byte
	stored := 0
	for i := range 64 {
		if status, raw = put(fmt.Sprint("k", i)); status != http.StatusNoContent {
			break
		}
		stored++
	}
	if status != http.StatusInsufficientStorage {
		t.Fatalf("after %d items: status %d, want 507: %s\n%s", stored, status, raw, p.logs)
	}
	var e map[string]string
	if err := json.Unmarshal(raw, &e); err != nil || e["code"] != "insufficient_storage" || !strings.Contains(e["detail"], "no space left") {
		t.Fatalf("507 body = %s", raw)
	}
	if stored == 0 {
		t.Fatal("nothing fit before the disk was full")
	}
	resp, err := client.Get(p.url + "/store/items?namespace=fill&key=k0")
	if err != nil {
		t.Fatal(err)
	}
	var item map[string]any
	json.NewDecoder(resp.Body).Decode(&item)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(item["value"].(map[string]any)["blob"].(string)) != 256<<10 {
		t.Fatalf("an item written before the disk filled: status %d", resp.StatusCode)
	}
}

// onTinyDisk writes a script that runs bin with its arguments in a private
// user and mount namespace where dataDir is a 4 MiB tmpfs, and returns the
// script's path, to be started in place of bin.
func onTinyDisk(t *testing.T, bin, dataDir string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "tiny-disk-server")
	body := fmt.Sprintf("#!/bin/sh\nexec unshare -Urm sh -c 'mount -t tmpfs -o size=4m tmpfs \"$1\" && shift && exec \"$@\"' sh %q %q \"$@\"\n", dataDir, bin)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}
