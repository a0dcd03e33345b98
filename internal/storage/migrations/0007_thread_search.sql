-- Thread searches on PostgreSQL read the threads table through its indexes
-- (internal/storage/pgthreads.go) instead of the embedded backend's index
-- entries threads_by_created, threads_by_status and threads_by_meta, which
-- PostgreSQL no longer keeps: a thread's status change (twice per run) was
-- a row deleted and one inserted in kv.
--
-- created_ns is the thread's creation time in nanoseconds since the epoch,
-- the order the embedded backend sorts by (timestamptz keeps microseconds:
-- two threads created in one microsecond would compare equal). The
-- fraction is cut to microseconds before the cast (which would round it)
-- and the digits beyond are added back.

-- Neither function is STRICT, and both are STABLE as what they call (the
-- text casts, convert_from): PostgreSQL then inlines them into the
-- statements that write the rows instead of calling them once per row
-- (agentserver_doc was IMMUTABLE, which kept it from being inlined: 20,000
-- calls for 10,000 runs).
ALTER FUNCTION agentserver_doc(bytea) STABLE;

CREATE FUNCTION agentserver_time_ns(t text) RETURNS numeric
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$ SELECT round(extract(epoch FROM regexp_replace(t, '\.([0-9]{0,6})[0-9]*', '.\1')::timestamptz) * 1000000000)
		+ coalesce(substring(rpad(substring(t FROM '\.([0-9]+)'), 9, '0') FROM 7 FOR 3)::integer, 0) $$;

ALTER TABLE threads ADD COLUMN created_ns numeric;
UPDATE threads SET created_ns = agentserver_time_ns(agentserver_doc(v)->>'created_at');

DROP INDEX threads_status_created;
CREATE INDEX threads_created ON threads (created_ns, thread_id);
CREATE INDEX threads_status_created ON threads (status, created_ns, thread_id);

DELETE FROM kv WHERE bucket IN ('threads_by_created', 'threads_by_status', 'threads_by_meta');
