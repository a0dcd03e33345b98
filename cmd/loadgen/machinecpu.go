package main

import (
	"fmt"
	"os"
	"strings"
)

// machineCPU is the whole machine's CPU time from the first line of
// /proc/stat, in clock ticks: what a measured loop's busy and steal shares
// are the difference of.
type machineCPU struct {
	total, idle, steal int64
}

// readMachineCPU reads the "cpu" line of /proc/stat (user nice system idle
// iowait irq softirq steal ...); idle counts iowait too.
func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var m machineCPU
	for i, s := range f[1:] {
		var v int64
		if _, err := fmt.Sscan(s, &v); err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat field %d %q: %w", i+1, s, err)
		}
		if i >= 8 {
			break // guest and guest_nice are already in user and nice
		}
		m.total += v
		switch i {
		case 3, 4: // idle, iowait
			m.idle += v
		case 7:
			m.steal += v
		}
	}
	return m, nil
}

// shares are the busy and stolen percentages of the machine's CPU time
// between m and a later reading.
func (m machineCPU) shares(later machineCPU) (busy, steal float64, ok bool) {
	total := later.total - m.total
	if total <= 0 {
		return 0, 0, false
	}
	busy = 100 * float64(total-(later.idle-m.idle)-(later.steal-m.steal)) / float64(total)
	steal = 100 * float64(later.steal-m.steal) / float64(total)
	return busy, steal, true
}
