package main

import "testing"

func TestMachineCPUShares(t *testing.T) {
	m, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if m.total <= 0 || m.idle > m.total || m.steal > m.total {
		t.Fatalf("machine CPU %+v", m)
	}
	before := machineCPU{total: 1000, idle: 600, steal: 10}
	after := machineCPU{total: 1200, idle: 650, steal: 30}
	busy, steal, ok := before.shares(after)
	if !ok || busy != 65 || steal != 10 {
		t.Errorf("shares = %v %% busy, %v %% stolen, %v; want 65, 10", busy, steal, ok)
	}
	if _, _, ok := after.shares(after); ok {
		t.Error("shares over no time reported ok")
	}
}
