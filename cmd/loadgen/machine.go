package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// machine describes where the figures were taken.
type machine struct {
	nproc      int
	cpuModel   string
	memTotal   string
	kernel     string
	goLoadgen  string
	goServer   string
	fs         string
	fsyncP50   time.Duration
	fsyncP99   time.Duration
	fsyncProbe error
	// pg describes the PostgreSQL server of -database-url ("" on bbolt).
	pg       string
	replicas int
}

// machineFacts gathers the machine facts and probes fdatasync latency in dir
// (the directory that holds the servers' data).
func machineFacts(dir string, o options) machine {
	m := machine{nproc: runtime.NumCPU(), goLoadgen: runtime.Version()}
	m.cpuModel = firstField("/proc/cpuinfo", "model name")
	m.memTotal = firstField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	switch {
	case o.inProcess:
		m.goServer = runtime.Version() + " (in-process)"
	case o.serverBin != "":
		if bi, err := buildinfo.ReadFile(o.serverBin); err == nil {
			m.goServer = bi.GoVersion
		}
	}
	m.fs = mountOf(dir)
	m.replicas = max(o.replicas, 1)
	if o.databaseURL != "" {
		m.pg = pgFacts(context.Background(), o.databaseURL)
	}
	m.fsyncP50, m.fsyncP99, m.fsyncProbe = probeFsync(dir, 200)
	return m
}

func (m machine) print(w io.Writer) {
	fmt.Fprintf(w, "machine: nproc=%d cpu=%q mem=%s kernel=%s\n", m.nproc, m.cpuModel, m.memTotal, m.kernel)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			fmt.Fprintf(w, "load average now (1/5/15 min): %s %s %s\n", f[0], f[1], f[2])
		}
	}
	fmt.Fprintf(w, "go: loadgen %s, server %s\n", m.goLoadgen, m.goServer)
	if m.pg != "" {
		fmt.Fprintf(w, "database: PostgreSQL (%s), a fresh schema per server group; replicas per group: %d\n", m.pg, m.replicas)
	} else {
		fmt.Fprintln(w, "database: the embedded bbolt file in each server's data dir")
	}
	if m.fsyncProbe != nil {
		fmt.Fprintf(w, "data fs: %s; fdatasync probe failed: %v\n", m.fs, m.fsyncProbe)
	} else {
		fmt.Fprintf(w, "data fs: %s; fdatasync after a 4 KiB write: p50=%s p99=%s (200 samples)\n", m.fs, ms(m.fsyncP50), ms(m.fsyncP99))
	}
}

// firstField returns the value of the first "key : value" line of a /proc file.
func firstField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// mountOf returns "device type" of the mount that holds dir.
func mountOf(dir string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "unknown"
	}
	abs, _ := filepath.Abs(dir)
	best, bestLen := "unknown", -1
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mp := f[1]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > bestLen {
			best, bestLen = f[0]+" "+f[2]+" on "+mp, len(mp)
		}
	}
	return best
}

// probeFsync overwrites one 4 KiB page of a preallocated file n times with an
// fdatasync after each write, as a database commit does, and returns the
// latency percentiles.
func probeFsync(dir string, n int) (p50, p99 time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		return 0, 0, err
	}
	if err := fdatasync(f); err != nil {
		return 0, 0, err
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		page[0] = byte(i)
		t0 := time.Now()
		if _, err := f.WriteAt(page, int64(i%256)*4096); err != nil {
			return 0, 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	s := summarize(lat, 0, 0, false)
	return s.p50, s.p99, nil
}
