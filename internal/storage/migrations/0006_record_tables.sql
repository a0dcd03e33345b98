-- The records move out of kv into a table per record bucket. Each row is
-- the record's key k (the primary key, ordered as the embedded backend
-- orders its keys, so the storage code's range reads are index scans), its
-- value v as the storage code encodes it (the source of truth), and typed
-- columns the server derives from k and v at each write
-- (internal/storage/pgrelations.go), for indexes and operators' SQL. They
-- replace the views of migration 3, with the same names and columns
-- (kwargs, and threads' and runs' config, are left in v: big, and not
-- queried). kv keeps meta and the embedded backend's index entries, but
-- for crons_by_due: the table's index crons_due replaces it.

DROP VIEW assistants, threads, runs, checkpoints, crons, store_items;

-- agentserver_uint32 reads 4 bytes of a key, big endian.
CREATE FUNCTION agentserver_uint32(k bytea, at integer) RETURNS bigint
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT (get_byte(k, at - 1)::bigint << 24) | (get_byte(k, at)::bigint << 16)
		| (get_byte(k, at + 1)::bigint << 8) | get_byte(k, at + 2)::bigint $$;

CREATE TABLE assistants (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	assistant_id uuid NOT NULL,
	graph_id text,
	name text,
	description text,
	version bigint,
	created_at timestamptz,
	updated_at timestamptz,
	metadata jsonb,
	config jsonb,
	context jsonb
);
CREATE INDEX assistants_graph ON assistants (graph_id);
CREATE INDEX assistants_metadata ON assistants USING gin (metadata jsonb_path_ops);
INSERT INTO assistants
SELECT k, v, agentserver_uuid(k, 1), d->>'graph_id', d->>'name', d->>'description', (d->>'version')::bigint,
	(d->>'created_at')::timestamptz, (d->>'updated_at')::timestamptz, d->'metadata', d->'config', d->'context'
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'assistants') s;

CREATE TABLE assistant_versions (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	assistant_id uuid NOT NULL,
	version bigint NOT NULL,
	created_at timestamptz,
	metadata jsonb
);
INSERT INTO assistant_versions
SELECT k, v, agentserver_uuid(k, 1), agentserver_uint32(k, 17), (d->>'created_at')::timestamptz, d->'metadata'
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'assistant_versions') s;

CREATE TABLE threads (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	thread_id uuid NOT NULL,
	status text,
	created_at timestamptz,
	updated_at timestamptz,
	metadata jsonb,
	error jsonb,
	ttl jsonb
);
CREATE INDEX threads_status_created ON threads (status, created_at);
CREATE INDEX threads_metadata ON threads USING gin (metadata jsonb_path_ops);
INSERT INTO threads
SELECT k, v, agentserver_uuid(k, 1), d->>'status', (d->>'created_at')::timestamptz, (d->>'updated_at')::timestamptz,
	d->'metadata', d->'error', d->'ttl'
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'threads') s;

-- A thread's own checkpoints (k: thread, checkpoint) and those of its
-- nested graphs (k: thread, namespace, 0, checkpoint); v is the encoded
-- checkpoint with its pending writes.
CREATE TABLE checkpoints (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	thread_id uuid NOT NULL,
	checkpoint_id uuid NOT NULL,
	bytes integer NOT NULL
);
INSERT INTO checkpoints
SELECT k, v, agentserver_uuid(k, 1), agentserver_uuid(k, 17), octet_length(v) FROM kv WHERE bucket = 'checkpoints';

CREATE TABLE nested_checkpoints (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	thread_id uuid NOT NULL,
	checkpoint_id uuid NOT NULL,
	bytes integer NOT NULL
);
INSERT INTO nested_checkpoints
SELECT k, v, agentserver_uuid(k, 1), agentserver_uuid(k, octet_length(k) - 15), octet_length(v)
FROM kv WHERE bucket = 'nested_checkpoints';

CREATE TABLE runs (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	run_id uuid NOT NULL,
	thread_id uuid,
	assistant_id uuid,
	graph_id text,
	status text,
	error text,
	attempt integer,
	multitask_strategy text,
	created_at timestamptz,
	updated_at timestamptz,
	started_at timestamptz,
	ended_at timestamptz,
	temporary boolean NOT NULL,
	owner text,
	metadata jsonb,
	usage jsonb
);
CREATE INDEX runs_thread_created ON runs (thread_id, created_at);
CREATE INDEX runs_status_created ON runs (status, created_at);
INSERT INTO runs
SELECT k, v, agentserver_uuid(k, 1), (d->>'thread_id')::uuid, (d->>'assistant_id')::uuid, d->>'graph_id', d->>'status',
	d->>'error', (d->>'attempt')::integer, d->>'multitask_strategy',
	(d->>'created_at')::timestamptz, (d->>'updated_at')::timestamptz, (d->>'started_at')::timestamptz, (d->>'ended_at')::timestamptz,
	coalesce((d->>'temporary')::boolean, false), nullif(d->>'owner', ''), d->'metadata', d->'usage'
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'runs') s;

CREATE TABLE crons (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	cron_id uuid NOT NULL,
	assistant_id uuid,
	thread_id uuid,
	schedule text,
	enabled boolean,
	next_run_date timestamptz,
	created_at timestamptz,
	updated_at timestamptz,
	metadata jsonb,
	payload jsonb
);
-- The scheduler's due crons (the embedded backend's crons_by_due).
CREATE INDEX crons_due ON crons (next_run_date, cron_id) WHERE enabled;
CREATE INDEX crons_thread ON crons (thread_id);
INSERT INTO crons
SELECT k, v, agentserver_uuid(k, 1), (d->>'assistant_id')::uuid, (d->>'thread_id')::uuid, d->>'schedule',
	(d->>'enabled')::boolean, (d->>'next_run_date')::timestamptz, (d->>'created_at')::timestamptz,
	(d->>'updated_at')::timestamptz, d->'metadata', d->'payload'
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'crons') s;

-- Store items (k: namespace, 0, key); a large value is stored in chunks
-- (kv's store_blobs), and bytes is the item record's size.
CREATE TABLE store_items (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	namespace text[] NOT NULL,
	key text NOT NULL,
	created_at timestamptz,
	updated_at timestamptz,
	expires_at timestamptz,
	bytes integer NOT NULL
);
CREATE INDEX store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL;
INSERT INTO store_items
SELECT k, v, ARRAY(SELECT jsonb_array_elements_text(d->'namespace')), d->>'key',
	(d->>'created_at')::timestamptz, (d->>'updated_at')::timestamptz, (d->>'expires_at')::timestamptz, octet_length(v)
FROM (SELECT k, v, agentserver_doc(v) AS d FROM kv WHERE bucket = 'store_items') s;

-- agentserver_uint32le reads 4 bytes of a value, little endian.
CREATE FUNCTION agentserver_uint32le(b bytea, at integer) RETURNS bigint
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT get_byte(b, at - 1)::bigint | (get_byte(b, at)::bigint << 8)
		| (get_byte(b, at + 1)::bigint << 16) | (get_byte(b, at + 2)::bigint << 24) $$;

-- The embedding vectors of a store item (k: the item's k): vectors of
-- dims float32 each, little endian, after an 8-byte header.
CREATE TABLE store_vectors (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	vectors bigint NOT NULL,
	dims bigint NOT NULL
);
INSERT INTO store_vectors
SELECT k, v, agentserver_uint32le(v, 1), agentserver_uint32le(v, 5) FROM kv WHERE bucket = 'store_vectors';

-- The chunks of store values too large for their item's record.
CREATE TABLE store_blobs (
	k bytea PRIMARY KEY,
	v bytea NOT NULL,
	blob_id uuid NOT NULL,
	chunk bigint NOT NULL,
	bytes integer NOT NULL
);
INSERT INTO store_blobs
SELECT k, v, agentserver_uuid(k, 1), agentserver_uint32(k, 17), octet_length(v) FROM kv WHERE bucket = 'store_blobs';

DELETE FROM kv WHERE bucket IN ('assistants', 'assistant_versions', 'threads', 'checkpoints', 'nested_checkpoints',
	'runs', 'crons', 'store_items', 'store_vectors', 'store_blobs', 'crons_by_due');
