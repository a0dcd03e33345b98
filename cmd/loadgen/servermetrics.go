package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// commitStats are the storage commit counters a server exposes on
// /metrics: how many commits, the seconds they took and the writes they
// grouped, summed since the server started.
type commitStats struct {
	commits, seconds, writes float64
}

func (c commitStats) sub(d commitStats) commitStats {
	return commitStats{c.commits - d.commits, c.seconds - d.seconds, c.writes - d.writes}
}

// scrapeCommits reads the commit histograms of every replica of t, summed.
func (r *runner) scrapeCommits(t *target) (commitStats, error) {
	var sum commitStats
	for _, p := range t.replicas() {
		res, err := do(r.ctx, r.client, http.MethodGet, p.baseURL+"/metrics", nil, true)
		if err != nil {
			return sum, err
		}
		sc := bufio.NewScanner(bytes.NewReader(res.body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			name, val, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				continue
			}
			switch name {
			case "agentserver_storage_commit_duration_seconds_count":
				sum.commits += v
			case "agentserver_storage_commit_duration_seconds_sum":
				sum.seconds += v
			case "agentserver_storage_commit_batch_size_sum":
				sum.writes += v
			}
		}
	}
	return sum, nil
}

// dbCPUTicks returns the CPU ticks of the PostgreSQL backends that serve the
// group t (those whose application_name is the group's schema, which the
// group's URL sets), summed; ok is false on bbolt or when the database is
// not on this machine.
func (r *runner) dbCPUTicks(t *target) (ticks int64, ok bool) {
	if t.schema == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, t.schema.base)
	if err != nil {
		return 0, false
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", t.schema.name)
	if err != nil {
		return 0, false
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(pids) == 0 {
		return 0, false
	}
	for _, pid := range pids {
		n, err := procCPUTicks(int(pid))
		if err != nil {
			if os.IsNotExist(err) {
				continue // ended since the query
			}
			return 0, false
		}
		ticks += n
	}
	return ticks, true
}

// serverCost reads the counters that a measured loop's cost is the
// difference of.
type serverCost struct {
	cpu, dbCPU     int64
	cpuOK, dbCPUOK bool
	commits        commitStats
	commitsOK      bool
	// self is loadgen's own CPU (ticks); machine the whole machine's.
	self      int64
	selfOK    bool
	machine   machineCPU
	machineOK bool
}

func (r *runner) readCost(t *target) serverCost {
	var c serverCost
	var err error
	c.cpu, err = t.cpuTicks()
	c.cpuOK = err == nil
	c.dbCPU, c.dbCPUOK = r.dbCPUTicks(t)
	c.commits, err = r.scrapeCommits(t)
	c.commitsOK = err == nil
	c.self, err = procCPUTicks(os.Getpid())
	c.selfOK = err == nil && !r.opts.inProcess
	c.machine, err = readMachineCPU()
	c.machineOK = err == nil
	return c
}

// costMeter measures what a loop costs the servers of a group: the
// counters read before and after it, and (-lock-waits) the lock waits
// sampled while it runs.
type costMeter struct {
	r      *runner
	t      *target
	before serverCost
	locks  *lockWaitSampler
}

// meterCost starts measuring a loop on t.
func (r *runner) meterCost(t *target) *costMeter {
	m := &costMeter{r: r, t: t, before: r.readCost(t)}
	if r.opts.lockWaits {
		m.locks = r.startLockWaits(t)
	}
	return m
}

// report adds the cost of the loop, n operations, under scenario s.
func (m *costMeter) report(s, per string, n int) {
	if m.locks != nil {
		line, err := m.locks.stop(n)
		if err != nil {
			line = "not sampled: " + err.Error()
		}
		m.r.report.add(s, "PostgreSQL lock wait ms per "+per+" (sampled every "+lockSampleEvery.String()+")", line, "", "")
	}
	m.r.reportCost(s, per, n, m.before, m.r.readCost(m.t))
}

// reportCost adds what a loop of n operations cost the servers between two
// readings: server CPU, database backend CPU and storage commits per
// operation.
func (r *runner) reportCost(s, per string, n int, before, after serverCost) {
	if n <= 0 {
		return
	}
	if before.cpuOK && after.cpuOK {
		r.report.add(s, "server CPU ms per "+per+r.inProcessNote(), fmt.Sprintf("%.3f", float64(after.cpu-before.cpu)*10/float64(n)), "", "")
	}
	if before.dbCPUOK && after.dbCPUOK {
		// Backends opened during the loop count from their start, which is
		// within the loop; backends that closed during it are missed.
		r.report.add(s, "PostgreSQL backend CPU ms per "+per, fmt.Sprintf("%.3f", float64(after.dbCPU-before.dbCPU)*10/float64(n)), "", "")
	}
	if before.selfOK && after.selfOK {
		r.report.add(s, "loadgen CPU ms per "+per, fmt.Sprintf("%.3f", float64(after.self-before.self)*10/float64(n)), "", "")
	}
	if before.machineOK && after.machineOK {
		// Steal is CPU the hypervisor gave to other guests: a round with
		// steal measures the host as much as the code.
		if busy, steal, ok := before.machine.shares(after.machine); ok {
			r.report.add(s, "machine CPU busy / stolen during the loop", fmt.Sprintf("%.0f %% / %.1f %%", busy, steal), "", "")
		}
	}
	if before.commitsOK && after.commitsOK {
		d := after.commits.sub(before.commits)
		if d.commits > 0 {
			r.report.add(s, "storage commits per "+per+" / writes per commit / ms per commit",
				fmt.Sprintf("%.2f / %.1f / %.2f", d.commits/float64(n), d.writes/d.commits, 1000*d.seconds/d.commits), "", "")
		}
	}
}
