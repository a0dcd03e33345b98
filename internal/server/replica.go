package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"agentserver/internal/storage"
)

// replicaIDFile keeps a replica's id in its data directory, so that a
// replica restarted after a crash recognizes the runs it left running and
// retries them at once instead of waiting for their leases to lapse.
const replicaIDFile = "replica-id"

// replicaLockFile is locked while a server uses the data directory: two
// replicas with one id would each believe they hold the other's runs.
const replicaLockFile = "replica.lock"

// replicaIdentity locks the data directory and returns the replica's id,
// creating it on first use; release unlocks the directory.
func replicaIdentity(dataDir string) (id string, release func(), err error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dataDir, replicaLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return "", nil, fmt.Errorf("%w: %s (is another server running with --data-dir %s? each replica needs a data directory of its own)", storage.ErrLocked, dataDir, dataDir)
		}
		return "", nil, err
	}
	release = func() { lock.Close() }
	path := filepath.Join(dataDir, replicaIDFile)
	raw, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(raw)) != "" {
		return strings.TrimSpace(string(raw)), release, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		release()
		return "", nil, err
	}
	id = uuid.NewString()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		release()
		return "", nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		release()
		return "", nil, err
	}
	return id, release, nil
}

// advertiseURL is the URL other replicas reach this server at: the
// configured one, else http:// and the bound address, with the host's name
// when it listens on every interface.
func advertiseURL(configured string, ln net.Listener) string {
	if configured != "" {
		return strings.TrimRight(configured, "/")
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		} else {
			host = "127.0.0.1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
