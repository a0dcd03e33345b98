package runs

import (
	"context"
	"errors"
	"reflect"

	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// startPlan is the start of a run computed ahead of the transaction that
// starts it: the executor input and the checkpoints its input makes before
// the first node runs (graph.Executor.Begin: LangGraph's input checkpoint
// and the __start__ step), encoded outside the transaction. Written in the
// transaction that marks the run running (its creation, or a worker's
// markRunning), they make the input visible in the thread's state and
// history from the moment the run starts, without a commit of their own.
type startPlan struct {
	// in is the executor input, its Begun set to the planned checkpoints.
	in      graph.Input
	encoded []storage.EncodedCheckpoint
	// fork is set when the run starts from a checkpoint it names, which
	// no later write changes; otherwise the plan holds only while its base
	// (in.From, nil for none) is the thread's newest checkpoint.
	fork bool
	// metadata is the run metadata the planned checkpoints carry.
	metadata map[string]any
}

// planStart computes the start of a stored run, or returns nil when there
// is nothing to write before its first node (a retry, a resume), when the
// run is temporary (its thread goes with it), when its graph's runner
// cannot tell the start ahead, or when the start cannot be computed (the
// executor reports why when the run executes).
func (s *Service) planStart(run storage.Run) *startPlan {
	starter := s.starter(run)
	if starter == nil {
		return nil
	}
	in, err := s.input(context.Background(), run)
	if err != nil {
		return nil
	}
	return plan(starter, run, in)
}

// starter returns what computes a run's start ahead, or nil when it is not
// to be planned: a temporary run, or a graph whose runner cannot tell its
// start (graph.Starter: the Go executor does; a graph worker writes its
// own).
func (s *Service) starter(run storage.Run) graph.Starter {
	if run.Temporary {
		return nil
	}
	runner, err := s.runner(run.GraphID)
	if err != nil {
		return nil
	}
	starter, _ := runner.(graph.Starter)
	return starter
}

// planCreation computes the start of a run being created with a claim, to
// be written with its creation (creation.apply). The run's metadata is
// merged from its thread's as apply merges it; apply writes the plan only
// when it merges the same.
func (s *Service) planCreation(c *creation) *startPlan {
	starter := s.starter(c.run)
	if starter == nil {
		return nil
	}
	run := c.run
	in := s.inputOf(run)
	if c.freshThread {
		th, _ := c.threadFor(storage.Thread{}, storage.ErrNotFound)
		run.Metadata = c.runMetadata(th.Metadata)
		return plan(starter, run, s.inputOf(run))
	}
	err := s.db.View(context.Background(), func(tx *storage.Tx) error {
		th, err := c.threadFor(tx.GetThread(run.ThreadID))
		if err != nil {
			return err
		}
		run.Metadata = c.runMetadata(th.Metadata)
		in = s.inputOf(run)
		return startingPoint(tx, run, &in)
	})
	if err != nil {
		return nil
	}
	return plan(starter, run, in)
}

// plan computes with starter and encodes the checkpoints run writes before
// its first node, starting from in.
func plan(starter graph.Starter, run storage.Run, in graph.Input) *startPlan {
	if in.Retry {
		return nil
	}
	begun, err := starter.Begin(in)
	if err != nil || len(begun) == 0 {
		return nil
	}
	var enc storage.CheckpointEncoder
	encoded := make([]storage.EncodedCheckpoint, 0, len(begun))
	for _, cp := range begun {
		e, err := enc.Encode(threads.StoredCheckpoint(cp))
		if err != nil {
			return nil
		}
		encoded = append(encoded, e)
	}
	in.Begun = begun
	return &startPlan{in: in, encoded: encoded, fork: run.Kwargs.CheckpointID != "", metadata: run.Metadata}
}

// write stores the plan's checkpoints in tx when the run still starts from
// the plan's base: a named checkpoint, or the thread's newest checkpoint
// unchanged since the plan read it. fresh is set for a thread this
// transaction creates (it has no checkpoint to check). It reports whether
// it wrote them; when not, the executor applies the input itself.
func (p *startPlan) write(tx *storage.Tx, fresh bool) (bool, error) {
	if !p.fork && !fresh {
		id, err := tx.LatestCheckpointID(p.in.ThreadID)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			if p.in.From != nil {
				return false, nil
			}
		case err != nil:
			return false, err
		case p.in.From == nil || p.in.From.CheckpointID != id:
			return false, nil
		}
	}
	return true, putEncoded(tx, p.encoded)
}

// sameMetadata reports whether two run metadata objects are equal, nil
// and empty alike.
func sameMetadata(a, b map[string]any) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// commitStart plans the start of a run that became running without one (a
// replica claimed it from the shared queue, or its creation's plan no
// longer held) and commits the planned checkpoints on their own, fenced by
// the run's token. It returns the plan when they were written.
func (s *Service) commitStart(run storage.Run) *startPlan {
	plan := s.planStart(run)
	if plan == nil {
		return nil
	}
	wrote := false
	err := s.db.Update(context.Background(), func(tx *storage.Tx) error {
		wrote = false
		if !tx.RunHeldBy(run.RunID, run.Token) {
			return nil // ended or taken over meanwhile
		}
		var err error
		wrote, err = plan.write(tx, false)
		return err
	})
	if err != nil {
		s.log.Warn("write the start of a run", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
	}
	if err != nil || !wrote {
		return nil
	}
	return plan
}

// attachPlan hands the plan written with a run's creation to its
// execution.
func (s *Service) attachPlan(c *creation) {
	if !c.planWritten {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lr := s.live[c.run.RunID]; lr != nil {
		lr.plan = c.plan
	}
}

// takePlan returns (and forgets) the plan written with a run's creation.
func (lr *liveRun) takePlan() *startPlan {
	p := lr.plan
	lr.plan = nil
	return p
}
