package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
	"agentserver/internal/retry"
	"agentserver/internal/sse"
	"agentserver/internal/storage"
)

// Streams of runs that execute on another replica: the replica a client
// asks follows the executing replica's own stream over HTTP (its
// AdvertiseURL) and serves it from a detached log, so every stream route
// works the same whichever replica a client reaches.

// PeerHeader marks a request one replica sends another: it is served from
// the receiving replica's own runs only, never relayed further.
const PeerHeader = "X-Agentserver-Peer"

type peerKey struct{}

// WithPeer marks ctx as the context of a request from another replica.
func WithPeer(ctx context.Context) context.Context {
	return context.WithValue(ctx, peerKey{}, true)
}

func fromPeer(ctx context.Context) bool {
	v, _ := ctx.Value(peerKey{}).(bool)
	return v
}

// peerRetry is the pause before a relay looks again after a failure.
const peerRetry = 250 * time.Millisecond

// peerClient streams from other replicas: no overall timeout, since
// streams last as long as runs.
var peerClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute, ResponseHeaderTimeout: 30 * time.Second}}

// executesHere reports whether this process executes the run (or is about
// to).
func (s *Service) executesHere(id uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	lr := s.live[id]
	return lr != nil && lr.here
}

// subscribeRemote returns a subscription to a run that is pending or
// executes on another replica, from its event after (-1: from the start,
// onlyNew: from now).
func (s *Service) subscribeRemote(run storage.Run, after int64) *events.Subscription {
	w := &mirrorWriter{log: events.NewDetachedLog(run.RunID), attempts: map[int]bool{}}
	sub := w.log.Subscribe(0)
	ctx, cancel := context.WithCancel(s.ctx)
	sub.OnClose(cancel)
	if after == onlyNew {
		// The joining handler opens the stream with the run's metadata.
		w.attempts[max(run.Attempt, 1)] = true
		if run.Status == storage.RunPending {
			after = 0 // everything it will do is new
		}
	}
	if run.Status == storage.RunPending {
		s.markJoined(run.RunID)
	}
	if l, ok := s.broker.Get(run.RunID); ok && after != onlyNew {
		// Created here: its metadata event went out with the creation.
		seed := l.Subscribe(after)
		for {
			ev, ok, err := seed.TryNext()
			if !ok || err != nil {
				break
			}
			w.add(ev.Seq, ev.Name, ev.Data)
		}
		seed.Close()
	}
	go s.relayRun(ctx, run, after, w)
	return sub
}

// markJoined records that a client follows a pending run from another
// replica, so that whichever replica starts it builds its events from the
// start (a quick run would otherwise be over before the relay connects).
func (s *Service) markJoined(id uuid.UUID) {
	err := s.db.Update(s.ctx, func(tx *storage.Tx) error {
		r, err := tx.GetRun(id)
		if err != nil || r.Status != storage.RunPending || r.Joined {
			return nil
		}
		r.Joined = true
		return tx.PutRun(r)
	})
	if err != nil && s.ctx.Err() == nil {
		s.log.Warn("mark a run joined", "run_id", id, "err", err)
	}
}

// mirrorWriter appends a relayed run's events to its detached log, once
// each: a metadata event of an attempt already announced (by the joining
// handler, or by the creating replica) is dropped.
type mirrorWriter struct {
	log      *events.Log
	attempts map[int]bool
}

func (w *mirrorWriter) add(seq int64, name string, data json.RawMessage) {
	if seq > 0 && seq <= w.log.LastSeq() {
		return // appended before a reconnect
	}
	if name == "metadata" {
		var m struct {
			Attempt int `json:"attempt"`
		}
		_ = json.Unmarshal(data, &m)
		if w.attempts[max(m.Attempt, 1)] {
			return
		}
		w.attempts[max(m.Attempt, 1)] = true
	}
	w.log.AppendAt(seq, name, data)
}

// relayRun fills the mirror with the run's events until the run ends or
// ctx does: from the replica executing it, from this process when the run
// comes to execute here, and from the database (resumable runs) once it
// ended.
func (s *Service) relayRun(ctx context.Context, run storage.Run, after int64, w *mirrorWriter) {
	defer w.log.Close()
	for ctx.Err() == nil {
		changed := s.shared.next(s.shared.changed, run.RunID)
		if s.executesHere(run.RunID) {
			if l, ok := s.broker.Get(run.RunID); ok {
				from := max(after, w.log.LastSeq())
				if after == onlyNew {
					from = l.LastSeq()
				}
				copyEvents(ctx, l.Subscribe(from), w)
				return
			}
		}
		owner, running, err := s.db.RunOwner(run.RunID)
		switch {
		case err != nil:
			s.log.Warn("find the replica of a run", "run_id", run.RunID, "err", err)
		case running && owner.ID != s.opts.ReplicaID:
			last, ended, err := s.streamFrom(ctx, owner.URL, run, after, w)
			if ended || ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Debug("run stream from another replica broke", "run_id", run.RunID, "replica", owner.ID, "err", err)
			}
			if last > 0 {
				after = last
			} else if w.log.LastSeq() > 0 {
				return // events without ids cannot be resumed
			}
		case !running:
			var active bool
			var stored storage.Run
			err := s.db.View(ctx, func(tx *storage.Tx) error {
				active = tx.RunIsActive(run.RunID)
				stored, _ = tx.GetRun(run.RunID)
				return nil
			})
			if err == nil && !active {
				// Ended: the replica that ran it last keeps its events
				// in memory for a while; resumable ones are stored too.
				if url := s.replicaURL(stored.Owner); url != "" {
					if last, _, _ := s.streamFrom(ctx, url, run, after, w); last > 0 {
						after = last
					}
				}
				s.replayEnded(ctx, run.RunID, max(after, w.log.LastSeq()), w)
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(peerRetry):
		}
	}
}

// replicaURL is the URL of a live replica other than this one ("" when
// it is this one, unknown or gone).
func (s *Service) replicaURL(id string) string {
	if id == "" || id == s.opts.ReplicaID {
		return ""
	}
	replicas, err := s.db.LiveReplicas()
	if err != nil {
		return ""
	}
	for _, r := range replicas {
		if r.ID == id {
			return r.URL
		}
	}
	return ""
}

// replayEnded appends the persisted events of an ended resumable run after
// event after.
func (s *Service) replayEnded(ctx context.Context, id uuid.UUID, after int64, w *mirrorWriter) {
	if after == onlyNew {
		return
	}
	sub, err := s.broker.Subscribe(ctx, id, after)
	if err != nil {
		return
	}
	copyEvents(s.ctx, sub, w)
}

// copyEvents appends what sub yields to the mirror until it ends.
func copyEvents(ctx context.Context, sub *events.Subscription, w *mirrorWriter) {
	defer sub.Close()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return
		}
		w.add(ev.Seq, ev.Name, ev.Data)
	}
}

// streamFrom appends the run's stream as the replica at base serves it,
// after event after. It returns the id of the last event read (0 when the
// stream has no ids), and whether the stream reached the run's end.
func (s *Service) streamFrom(ctx context.Context, base string, run storage.Run, after int64, w *mirrorWriter) (last int64, ended bool, err error) {
	u := fmt.Sprintf("%s/threads/%s/runs/%s/stream", base, url.PathEscape(run.ThreadID.String()), url.PathEscape(run.RunID.String()))
	resp, err := s.peerGet(ctx, u, after)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The owner ends a run's stream when the run ends.
				return last, true, nil
			}
			return last, false, err
		}
		seq, _ := strconv.ParseInt(f.ID, 10, 64)
		w.add(seq, f.Name, json.RawMessage(f.Data))
		if seq > 0 {
			last = seq
		}
	}
}

// peerGet opens a stream on another replica, as a peer.
func (s *Service) peerGet(ctx context.Context, u string, after int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(PeerHeader, "1")
	req.Header.Set("Accept", "text/event-stream")
	if s.opts.PeerAPIKey != "" {
		req.Header.Set("x-api-key", s.opts.PeerAPIKey)
	}
	switch {
	case after == onlyNew:
	case after <= 0:
		req.Header.Set("Last-Event-ID", "-1")
	default:
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s: %s", u, resp.Status, body)
	}
	return resp, nil
}

// threadRelays keeps, for each thread with stream clients on this
// replica, a relay of the thread's events on every other replica.
type threadRelays struct {
	mu     sync.Mutex
	active map[uuid.UUID]context.CancelFunc
}

// relayThread makes sure the events of the thread's runs on the other
// replicas reach this replica's feed while it has clients.
// after is the Last-Event-ID of the client that opened the feed (onlyNew
// without one): the relays ask the other replicas for their events after
// it, since a thread's event ids are the same on every replica.
func (s *Service) relayThread(threadID uuid.UUID, after int64) {
	r := &s.relays
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active == nil {
		r.active = map[uuid.UUID]context.CancelFunc{}
	}
	if _, ok := r.active[threadID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r.active[threadID] = cancel
	go s.relayThreadLoop(ctx, threadID, after)
}

// relayThreadLoop follows the thread's stream on each other live replica,
// looking for new replicas every lease/3, until the feed has no clients.
func (s *Service) relayThreadLoop(ctx context.Context, threadID uuid.UUID, after int64) {
	defer func() {
		s.relays.mu.Lock()
		delete(s.relays.active, threadID)
		s.relays.mu.Unlock()
	}()
	following := map[string]context.CancelFunc{}
	defer func() {
		for _, stop := range following {
			stop()
		}
	}()
	tick := time.NewTicker(s.db.Lease() / 3)
	defer tick.Stop()
	for {
		if !s.watchers.hasClients(threadID) {
			return
		}
		replicas, err := s.db.LiveReplicas()
		if err != nil {
			s.log.Warn("list replicas", "err", err)
		}
		alive := map[string]bool{}
		for _, rep := range replicas {
			alive[rep.ID] = true
			if rep.ID == s.opts.ReplicaID || following[rep.ID] != nil {
				continue
			}
			rctx, stop := context.WithCancel(ctx)
			following[rep.ID] = stop
			go s.followThread(rctx, rep, threadID, after)
		}
		for id, stop := range following {
			if err == nil && !alive[id] {
				stop()
				delete(following, id)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// followThread publishes into this replica's feed the events the thread's
// runs emit on replica rep, from its event after, reconnecting after the
// last one received until ctx ends.
func (s *Service) followThread(ctx context.Context, rep storage.Replica, threadID uuid.UUID, after int64) {
	u := fmt.Sprintf("%s/threads/%s/stream?stream_mode=run_modes", rep.URL, url.PathEscape(threadID.String()))
	for ctx.Err() == nil {
		resp, err := s.peerGet(ctx, u, after)
		if err == nil {
			r := sse.NewReader(resp.Body)
			for {
				f, err := r.Next()
				if err != nil {
					break
				}
				id, _ := strconv.ParseInt(f.ID, 10, 64)
				s.watchers.publishRelayed(threadID, f.Name, json.RawMessage(f.Data), id)
				if id > 0 {
					after = id
				}
			}
			resp.Body.Close()
		}
		_ = retry.Wait(ctx, peerRetry) // the loop ends with ctx
	}
}
