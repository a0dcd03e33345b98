-- The shared run queue of several replicas: one row per pending or running
-- run, kept in the same transaction as the run's record in kv. Replicas
-- claim pending rows with FOR UPDATE SKIP LOCKED; a running row holds a
-- lease its replica renews, and a lapsed lease lets another replica take
-- the run over. token is the fencing token of the run's current start.
CREATE TABLE run_queue (
	run_id uuid PRIMARY KEY,
	thread_id uuid NOT NULL,
	status text NOT NULL CHECK (status IN ('pending', 'running')),
	not_before timestamptz NOT NULL,
	owner text NOT NULL DEFAULT '',
	token bigint NOT NULL DEFAULT 0,
	lease_until timestamptz,
	pinned text NOT NULL DEFAULT ''
);
CREATE INDEX run_queue_by_thread ON run_queue (thread_id, run_id);
CREATE INDEX run_queue_pending ON run_queue (run_id) WHERE status = 'pending';
CREATE INDEX run_queue_leases ON run_queue (lease_until) WHERE status = 'running';
CREATE INDEX run_queue_by_owner ON run_queue (owner) WHERE status = 'running';

-- Replicas serving this schema: the URL other replicas reach each one at
-- (to stream its runs) and when it last said it was alive.
CREATE TABLE replicas (
	id text PRIMARY KEY,
	url text NOT NULL,
	started_at timestamptz NOT NULL DEFAULT now(),
	seen_at timestamptz NOT NULL DEFAULT now()
);

-- Runs already pending or running in kv (a database of a single server)
-- join the queue; a running one is owned by nobody, so the first replica
-- to look takes it over.
INSERT INTO run_queue (run_id, thread_id, status, not_before, lease_until)
SELECT (r.j->>'run_id')::uuid, (r.j->>'thread_id')::uuid, r.j->>'status',
	coalesce((r.j->>'not_before')::timestamptz, now()),
	CASE WHEN r.j->>'status' = 'running' THEN '-infinity'::timestamptz END
FROM (SELECT convert_from(kv.v, 'UTF8')::jsonb AS j
	FROM kv JOIN kv a ON a.bucket = 'runs_active' AND a.k = kv.k
	WHERE kv.bucket = 'runs') r
WHERE r.j->>'status' IN ('pending', 'running');
