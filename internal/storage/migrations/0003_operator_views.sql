-- Relational views of the records, for operators' SQL (docs/scale-out.md):
-- one row per record, its fields as typed columns and its JSON objects as
-- jsonb. They read kv, so they are always current and cost nothing to
-- writes; a query over them decodes the records it scans.

-- agentserver_doc decodes a record. jsonb cannot hold U+0000, which JSON
-- text may escape: it becomes U+FFFD here.
CREATE FUNCTION agentserver_doc(v bytea) RETURNS jsonb
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT replace(convert_from(v, 'UTF8'), '\u0000', '\ufffd')::jsonb $$;

-- agentserver_uuid reads 16 bytes of a key as a uuid.
CREATE FUNCTION agentserver_uuid(k bytea, at integer) RETURNS uuid
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT encode(substring(k FROM at FOR 16), 'hex')::uuid $$;

CREATE VIEW assistants AS
SELECT (d->>'assistant_id')::uuid AS assistant_id, d->>'graph_id' AS graph_id, d->>'name' AS name,
	d->>'description' AS description, (d->>'version')::integer AS version,
	(d->>'created_at')::timestamptz AS created_at, (d->>'updated_at')::timestamptz AS updated_at,
	d->'metadata' AS metadata, d->'config' AS config, d->'context' AS context
FROM (SELECT agentserver_doc(v) AS d FROM kv WHERE bucket = 'assistants') r;

CREATE VIEW threads AS
SELECT (d->>'thread_id')::uuid AS thread_id, d->>'status' AS status,
	(d->>'created_at')::timestamptz AS created_at, (d->>'updated_at')::timestamptz AS updated_at,
	d->'metadata' AS metadata, d->'config' AS config, d->'error' AS error, d->'ttl' AS ttl
FROM (SELECT agentserver_doc(v) AS d FROM kv WHERE bucket = 'threads') r;

CREATE VIEW runs AS
SELECT (d->>'run_id')::uuid AS run_id, (d->>'thread_id')::uuid AS thread_id,
	(d->>'assistant_id')::uuid AS assistant_id, d->>'graph_id' AS graph_id, d->>'status' AS status,
	d->>'error' AS error, (d->>'attempt')::integer AS attempt, d->>'multitask_strategy' AS multitask_strategy,
	(d->>'created_at')::timestamptz AS created_at, (d->>'updated_at')::timestamptz AS updated_at,
	(d->>'started_at')::timestamptz AS started_at, (d->>'ended_at')::timestamptz AS ended_at,
	coalesce((d->>'temporary')::boolean, false) AS temporary, nullif(d->>'owner', '') AS owner,
	d->'metadata' AS metadata, d->'kwargs' AS kwargs, d->'usage' AS usage
FROM (SELECT agentserver_doc(v) AS d FROM kv WHERE bucket = 'runs') r;

-- The checkpoints of threads' own graphs (not of nested graphs), with the
-- size of each as stored.
CREATE VIEW checkpoints AS
SELECT agentserver_uuid(k, 1) AS thread_id, agentserver_uuid(k, 17) AS checkpoint_id, octet_length(v) AS bytes
FROM kv WHERE bucket = 'checkpoints';

CREATE VIEW crons AS
SELECT (d->>'cron_id')::uuid AS cron_id, (d->>'assistant_id')::uuid AS assistant_id,
	(d->>'thread_id')::uuid AS thread_id, d->>'schedule' AS schedule, (d->>'enabled')::boolean AS enabled,
	(d->>'next_run_date')::timestamptz AS next_run_date,
	(d->>'created_at')::timestamptz AS created_at, (d->>'updated_at')::timestamptz AS updated_at,
	d->'metadata' AS metadata, d->'payload' AS payload
FROM (SELECT agentserver_doc(v) AS d FROM kv WHERE bucket = 'crons') r;

-- Store items' values stay in kv (a large one is stored in chunks): the
-- view has their place, dates and stored size.
CREATE VIEW store_items AS
SELECT ARRAY(SELECT jsonb_array_elements_text(d->'namespace')) AS namespace, d->>'key' AS key,
	(d->>'created_at')::timestamptz AS created_at, (d->>'updated_at')::timestamptz AS updated_at,
	(d->>'expires_at')::timestamptz AS expires_at, bytes
FROM (SELECT agentserver_doc(v) AS d, octet_length(v) AS bytes FROM kv WHERE bucket = 'store_items') r;
