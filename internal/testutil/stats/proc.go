package stats

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU is the process's user + system CPU time so far: in a
// whole-server benchmark, the server's run workers included.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcStatusMiB reads the memory lines of /proc/self/status (VmRSS,
// VmHWM, RssAnon, RssFile, …) in MiB; empty where the file cannot be read.
func ProcStatusMiB() map[string]float64 {
	out := map[string]float64{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseFloat(fields[0], 64); err == nil {
			out[k] = kb / 1024
		}
	}
	return out
}
