-- The stored stream events of runs (resumable runs) and of threads (the
-- thread-centric stream's replay buffer) move out of kv into tables of
-- their own, keyed (owner, seq): a run's or a thread's deletion removes
-- its events with one statement, and the thread events' retention is one
-- DELETE on their publication time. v is the event as stored in kv (JSON
-- text; the thread events' "at" is also a column).
CREATE TABLE run_events (
	run_id uuid NOT NULL,
	seq bigint NOT NULL CHECK (seq > 0),
	v bytea NOT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE thread_events (
	thread_id uuid NOT NULL,
	seq bigint NOT NULL CHECK (seq > 0),
	at timestamptz NOT NULL,
	v bytea NOT NULL,
	PRIMARY KEY (thread_id, seq)
);
CREATE INDEX thread_events_by_time ON thread_events (at);

-- agentserver_seq reads the big-endian seq that follows the owner's 16
-- bytes in a kv event key.
CREATE FUNCTION agentserver_seq(k bytea) RETURNS bigint
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT ('x' || encode(substring(k FROM 17 FOR 8), 'hex'))::bit(64)::bigint $$;

INSERT INTO run_events (run_id, seq, v)
SELECT agentserver_uuid(k, 1), agentserver_seq(k), v FROM kv
WHERE bucket = 'run_events' AND octet_length(k) = 24;

INSERT INTO thread_events (thread_id, seq, at, v)
SELECT agentserver_uuid(k, 1), agentserver_seq(k),
	to_timestamp(coalesce((agentserver_doc(v)->>'at')::bigint, 0) / 1000.0), v
FROM kv WHERE bucket = 'thread_events' AND octet_length(k) = 24;

DELETE FROM kv WHERE bucket IN ('run_events', 'thread_events');
