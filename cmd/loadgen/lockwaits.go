package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockSampleEvery is how often the lock-wait sampler looks at the group's
// sessions.
const lockSampleEvery = 2 * time.Millisecond

// pgLockWaitsSQL counts the group's sessions (application_name is its
// schema) that wait on a heavyweight lock, by kind of lock: "advisory"
// (the schema-wide writer lock of builds before row locks),
// "transactionid" and "tuple" (a row another transaction is changing),
// "extend" (a table growing), "object" (the NOTIFY queue) and so on.
const pgLockWaitsSQL = `SELECT wait_event, count(*) FROM pg_stat_activity
WHERE application_name = $1 AND wait_event_type = 'Lock' GROUP BY wait_event`

// lockWaitSampler estimates, while a measured loop runs, the time the
// group's PostgreSQL sessions spend waiting on locks: every
// lockSampleEvery it counts the waiting sessions, and each one counts as
// having waited the time since the previous sample. It is the "time per
// run waiting on locks" of the PostgreSQL scale-out figures.
type lockWaitSampler struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex // guards what follows
	// waited is the estimated wait by kind of lock; samples counts the
	// samples taken, err the error that stopped sampling.
	waited  map[string]time.Duration
	samples int
	err     error
}

// startLockWaits starts sampling the lock waits of group t; nil on bbolt.
func (r *runner) startLockWaits(t *target) *lockWaitSampler {
	if t.schema == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	s := &lockWaitSampler{cancel: cancel, done: make(chan struct{}), waited: map[string]time.Duration{}}
	go s.run(ctx, t.schema)
	return s
}

func (s *lockWaitSampler) run(ctx context.Context, schema *pgSchema) {
	defer close(s.done)
	conn, err := pgx.Connect(ctx, schema.base)
	if err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return
	}
	defer conn.Close(context.Background())
	tick := time.NewTicker(lockSampleEvery)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		since := now.Sub(last)
		last = now
		if err := s.sample(ctx, conn, schema.name, since); err != nil {
			if ctx.Err() == nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
			return
		}
	}
}

// sample adds one look at the waiting sessions, each counted as waiting
// for since.
func (s *lockWaitSampler) sample(ctx context.Context, conn *pgx.Conn, group string, since time.Duration) error {
	rows, err := conn.Query(ctx, pgLockWaitsSQL, group)
	if err != nil {
		return err
	}
	var kind string
	var n int64
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error {
		s.waited[kind] += time.Duration(n) * since
		return nil
	})
	s.samples++
	return err
}

// waitedOn returns the wait on kind sampled so far.
func (s *lockWaitSampler) waitedOn(kind string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waited[kind]
}

// stop ends the sampling and returns the line that reports it for n
// operations: the estimated lock wait per operation, in all and by kind.
func (s *lockWaitSampler) stop(n int) (string, error) {
	s.cancel()
	<-s.done
	if s.err != nil {
		return "", s.err
	}
	if s.samples == 0 || n <= 0 {
		return "", fmt.Errorf("no sample of the lock waits")
	}
	var total time.Duration
	kinds := make([]string, 0, len(s.waited))
	for k, d := range s.waited {
		total += d
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	perOp := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d.Microseconds())/1000/float64(n)) }
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, k+" "+perOp(s.waited[k]))
	}
	line := perOp(total)
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line, nil
}
