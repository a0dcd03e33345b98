-- The records of synchronous subagents (task tool calls) move out of kv
-- into a table keyed (parent run, tool call): their status is a column, so
-- a start-up finds the live ones by index, and a run's deletion removes
-- its records with one statement. tool_call_id is the id's bytes (a
-- model's id could hold what text cannot); v is the record's JSON.
CREATE TABLE subagents (
	run_id uuid NOT NULL,
	tool_call_id bytea NOT NULL,
	thread_id uuid NOT NULL,
	status text NOT NULL,
	started_at timestamptz,
	ended_at timestamptz,
	v bytea NOT NULL,
	PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX subagents_live ON subagents (run_id) WHERE status IN ('pending', 'running');

INSERT INTO subagents (run_id, tool_call_id, thread_id, status, started_at, ended_at, v)
SELECT agentserver_uuid(k, 1), substring(k FROM 17), (d->>'thread_id')::uuid, d->>'status',
	(d->>'started_at')::timestamptz, (d->>'ended_at')::timestamptz, v
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'subagents' AND octet_length(k) >= 16) s;

DELETE FROM kv WHERE bucket = 'subagents';
