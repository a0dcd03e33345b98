package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockWait is one sampled wait of a replica's database session on a
// heavyweight lock.
type lockWait struct {
	// waiter and blockers are application names (contention-N).
	waiter, blockers string
	// kind is pg_locks.locktype: "tuple" and "transactionid" are row locks
	// (a row another transaction changes or locks), "advisory" an advisory
	// lock, "object" the database's NOTIFY queue lock, "extend" a table's
	// growth.
	kind string
	// row is the kv row waited for (bucket and hex key) when kind is
	// "tuple" and the row could be read.
	row string
}

func (w lockWait) String() string {
	s := fmt.Sprintf("%s waited on a lock (%s) held by %s", w.waiter, w.kind, w.blockers)
	if w.row != "" {
		s += " (row " + w.row + ")"
	}
	return s
}

// pgSessionLockWaitsSQL lists the ungranted locks of sessions whose
// application_name starts with $1, with the sessions blocking each.
const pgSessionLockWaitsSQL = `SELECT a.application_name, l.locktype,
	coalesce((SELECT string_agg(b.application_name, ',') FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))), ''),
	coalesce(CASE WHEN l.locktype = 'tuple' THEN format('(%s,%s)', l.page, l.tuple) END, ''),
	coalesce(l.relation::regclass::text, '')
FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
WHERE a.application_name LIKE $1 || '%'`

// sampleLockWaits collects, until ctx ends, the lock waits of the sessions
// whose application_name starts with prefix, looking every few
// milliseconds; a wait seen in consecutive samples is counted in each.
func sampleLockWaits(ctx context.Context, tb testing.TB, dbURL, prefix string) func() ([]lockWait, int) {
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu      sync.Mutex
		waits   []lockWait
		samples int
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, pgSessionLockWaitsSQL, prefix)
			if err != nil {
				if ctx.Err() == nil {
					tb.Errorf("sample lock waits: %v", err)
				}
				return
			}
			var seen []lockWait
			var ctids, tables []string
			for rows.Next() {
				var w lockWait
				var ctid, table string
				if err := rows.Scan(&w.waiter, &w.kind, &w.blockers, &ctid, &table); err != nil {
					tb.Errorf("sample lock waits: %v", err)
				}
				seen, ctids, tables = append(seen, w), append(ctids, ctid), append(tables, table)
			}
			rows.Close()
			for i := range seen {
				if ctids[i] == "" {
					continue
				}
				// The row waited on: a bucket's key in kv, a record's key
				// in its table.
				var bucket string
				var k []byte
				if tables[i] == "kv" {
					if conn.QueryRow(ctx, `SELECT bucket, k FROM kv WHERE ctid = $1::tid`, ctids[i]).Scan(&bucket, &k) == nil {
						seen[i].row = fmt.Sprintf("%s/%x", bucket, k)
					}
				} else if conn.QueryRow(ctx, `SELECT k FROM `+pgx.Identifier{tables[i]}.Sanitize()+` WHERE ctid = $1::tid`, ctids[i]).Scan(&k) == nil {
					seen[i].row = fmt.Sprintf("%s/%x", tables[i], k)
				}
			}
			mu.Lock()
			waits = append(waits, seen...)
			samples++
			mu.Unlock()
		}
	}()
	return func() ([]lockWait, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return waits, samples
	}
}

// TestReplicaWritesOfDifferentThreadsDoNotWait runs three replicas on one
// schema and 200 threads, each used by one client through one replica
// (which also executes its runs: a replica with a free worker starts the
// runs it creates), with runs on all of them at once, and samples the
// replicas' database sessions' lock waits meanwhile: no replica may wait on
// a row lock another holds (each writes threads of its own, and nothing
// else is shared by the threads) nor on an advisory lock (there is no
// cluster-wide writer lock any more).
func TestReplicaWritesOfDifferentThreadsDoNotWait(t *testing.T) {
	skipWithoutReplicas(t)
	bin := buildServer(t)
	c := newReplicaCluster(t, bin, "15s", 30*time.Millisecond)
	// More workers than a replica's clients: every run starts on the
	// replica that creates it, never pending for another to claim.
	c.jobs = "100"
	const prefix = "contention-"
	reps := []*replica{c.startAs(t, prefix+"0"), c.startAs(t, prefix+"1"), c.startAs(t, prefix+"2")}
	client := &http.Client{Timeout: time.Minute}

	const threads, runsPerThread = 200, 3
	ids := make([]string, threads)
	for i := range ids {
		code, th, err := postJSON(t, client, reps[i%3].url+"/threads", map[string]any{})
		if err != nil || code != 200 {
			t.Fatalf("create thread: %d %v", code, err)
		}
		ids[i] = th["thread_id"].(string)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	collect := sampleLockWaits(ctx, t, c.dbURL, prefix)
	began := time.Now()
	var wg sync.WaitGroup
	failures := make(chan string, threads)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range runsPerThread {
				body := map[string]any{
					"assistant_id": "slow",
					"input":        map[string]any{"messages": []any{map[string]any{"role": "user", "content": fmt.Sprintf("t%d-%d", i, n)}}},
				}
				code, out, err := postJSON(t, client, reps[i%3].url+"/threads/"+id+"/runs/wait", body)
				if err != nil || code != 200 {
					failures <- fmt.Sprintf("thread %s run %d: %d %v %v", id, n, code, err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	stop()
	waits, samples := collect()
	close(failures)
	for f := range failures {
		t.Error(f)
	}

	byKind := map[string]int{}
	var rowWaits []string
	for _, w := range waits {
		byKind[w.kind]++
		// A replica's own sessions may wait for each other: its writer
		// ending a run waits for its lease renewal, which holds that
		// run's queue row for a moment. Between replicas, each writing
		// threads of its own, no row is shared.
		if (w.kind == "tuple" || w.kind == "transactionid" || w.kind == "advisory") && w.blockers != w.waiter {
			rowWaits = append(rowWaits, w.String())
		}
	}
	var kinds []string
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%d runs on %d threads through 3 replicas in %v; %d lock-wait samples; waits seen: [%s]",
		threads*runsPerThread, threads, elapsed.Round(time.Millisecond), samples, strings.Join(kinds, ", "))
	if samples < 10 {
		t.Fatalf("only %d samples of the lock waits were taken", samples)
	}
	if len(rowWaits) > 0 {
		t.Errorf("%d sampled waits on row or advisory locks between writers of different threads; the first: %s", len(rowWaits), strings.Join(rowWaits[:min(len(rowWaits), 10)], "; "))
	}
}
