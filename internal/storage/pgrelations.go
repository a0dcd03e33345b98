package storage

import (
	"fmt"
	"slices"
	"strings"
)

// Where buckets live on PostgreSQL. The record buckets (assistants and
// their versions, threads, checkpoints, runs, crons, store items with
// their vectors and large values) are
// tables of their own (migrations/0006_record_tables.sql): the record's key
// k (its primary key, ordered as bbolt orders it), its value v as the
// record code encodes it, and typed columns derived from both at each
// write, for indexes and operators' SQL. The other buckets (the
// embedded backend's index entries, meta) are rows of kv. pgBucket,
// pgCursor, the overlay's batched writes and prefetches take their SQL
// from the bucket's relation, so the record code above the seam does not
// know which it is on.

// pgRelation is the table a bucket's keys are rows of, with the statements
// that read and write them there.
type pgRelation struct {
	table string
	// bucketed is set for kv: the bucket is a column, and each statement
	// takes it (or, for the batched ones, an array of buckets) as its
	// first argument.
	bucketed bool

	getSQL, getForUpdateSQL, tailSQL      string
	countSQL                              string
	fromSQL, afterSQL, beforeSQL, lastSQL string
	// The batched writes (pgoverlay.go): keys and values as arrays.
	putManySQL, insertManySQL, deleteManySQL, deleteRangesSQL string
}

// args prepends the bucket to a statement's arguments when the relation
// is kv.
func (r *pgRelation) args(bucket any, rest ...any) []any {
	if !r.bucketed {
		return rest
	}
	return append([]any{bucket}, rest...)
}

// pgKV is the relation of the buckets without a table of their own.
var pgKV = &pgRelation{
	table: "kv", bucketed: true,
	getSQL: pgGetSQL, getForUpdateSQL: pgGetForUpdateSQL, tailSQL: pgTailSQL,
	countSQL: `SELECT count(*) FROM kv WHERE bucket = $1`,
	fromSQL:  pgFromSQL, afterSQL: pgAfterSQL, beforeSQL: pgBeforeSQL, lastSQL: pgLastSQL,
	putManySQL: pgPutManySQL, insertManySQL: pgInsertManySQL, deleteManySQL: pgDeleteManySQL, deleteRangesSQL: pgDeleteRangesSQL,
}

// recordColumn is a typed column of a record table and the SQL expression
// that derives it at each write, over k, v and, for tables of JSON
// records, d (the record as jsonb, agentserver_doc(v)).
type recordColumn struct{ name, expr string }

// recordTable describes a record bucket's table.
type recordTable struct {
	bucket []byte
	// json is set when the bucket's values are JSON records (d is
	// defined for the column expressions).
	json    bool
	columns []recordColumn
}

// uuidField is the expression of a JSON field holding a uuid (or null).
func uuidField(f string) string { return "(d->>'" + f + "')::uuid" }

// timeField is the expression of a JSON field holding a timestamp.
func timeField(f string) string { return "(d->>'" + f + "')::timestamptz" }

// textField is the expression of a JSON field holding a string.
func textField(f string) string { return "d->>'" + f + "'" }

// jsonField is the expression of a JSON field kept as jsonb.
func jsonField(f string) string { return "d->'" + f + "'" }

// cols names columns whose expression is a field of the same name read by
// field (textField, timeField…).
func cols(field func(string) string, names ...string) []recordColumn {
	out := make([]recordColumn, len(names))
	for i, n := range names {
		out[i] = recordColumn{n, field(n)}
	}
	return out
}

// concat joins column lists.
func concat(lists ...[]recordColumn) []recordColumn {
	var out []recordColumn
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// recordTables are the tables of the record buckets. Keep them in step
// with the migration that creates them: a column added here needs a
// migration that adds it (and fills it from v).
var recordTables = []recordTable{
	{bucket: bucketAssistants, json: true, columns: concat(
		[]recordColumn{{"assistant_id", "agentserver_uuid(k, 1)"}},
		cols(textField, "graph_id", "name", "description"),
		[]recordColumn{{"version", "(d->>'version')::bigint"}},
		cols(timeField, "created_at", "updated_at"),
		cols(jsonField, "metadata", "config", "context"))},
	{bucket: bucketAssistantVersions, json: true, columns: concat(
		[]recordColumn{{"assistant_id", "agentserver_uuid(k, 1)"}, {"version", "agentserver_uint32(k, 17)"}},
		cols(timeField, "created_at"),
		cols(jsonField, "metadata"))},
	{bucket: bucketThreads, json: true, columns: concat(
		[]recordColumn{{"thread_id", "agentserver_uuid(k, 1)"}},
		cols(textField, "status"),
		cols(timeField, "created_at", "updated_at"),
		cols(jsonField, "metadata", "error", "ttl"),
		// The embedded backend's order of creation (pgthreads.go).
		[]recordColumn{{"created_ns", "agentserver_time_ns(d->>'created_at')"}})},
	{bucket: bucketCheckpoints, columns: []recordColumn{
		{"thread_id", "agentserver_uuid(k, 1)"}, {"checkpoint_id", "agentserver_uuid(k, 17)"}, {"bytes", "octet_length(v)"}}},
	{bucket: bucketNestedCheckpoints, columns: []recordColumn{
		{"thread_id", "agentserver_uuid(k, 1)"}, {"checkpoint_id", "agentserver_uuid(k, octet_length(k) - 15)"}, {"bytes", "octet_length(v)"}}},
	{bucket: bucketRuns, json: true, columns: concat(
		[]recordColumn{{"run_id", "agentserver_uuid(k, 1)"}},
		cols(uuidField, "thread_id", "assistant_id"),
		cols(textField, "graph_id", "status", "error"),
		[]recordColumn{{"attempt", "(d->>'attempt')::integer"}},
		cols(textField, "multitask_strategy"),
		cols(timeField, "created_at", "updated_at", "started_at", "ended_at"),
		[]recordColumn{{"temporary", "coalesce((d->>'temporary')::boolean, false)"}, {"owner", "nullif(d->>'owner', '')"}},
		cols(jsonField, "metadata", "usage"))},
	{bucket: bucketCrons, json: true, columns: concat(
		[]recordColumn{{"cron_id", "agentserver_uuid(k, 1)"}},
		cols(uuidField, "assistant_id", "thread_id"),
		cols(textField, "schedule"),
		[]recordColumn{{"enabled", "(d->>'enabled')::boolean"}},
		cols(timeField, "next_run_date", "created_at", "updated_at"),
		cols(jsonField, "metadata", "payload"))},
	{bucket: bucketStoreItems, json: true, columns: concat(
		[]recordColumn{{"namespace", "ARRAY(SELECT jsonb_array_elements_text(d->'namespace'))"}},
		cols(textField, "key"),
		cols(timeField, "created_at", "updated_at", "expires_at"),
		[]recordColumn{{"bytes", "octet_length(v)"}})},
	// An item's embedding vectors (k: the item's k), encodeVectors'
	// layout: count and dimensions, then the floats.
	{bucket: bucketStoreVectors, columns: []recordColumn{
		{"vectors", "agentserver_uint32le(v, 1)"}, {"dims", "agentserver_uint32le(v, 5)"}}},
	// The chunks of large store values (storeBlobKey: blob id, chunk).
	{bucket: bucketStoreBlobs, columns: []recordColumn{
		{"blob_id", "agentserver_uuid(k, 1)"}, {"chunk", "agentserver_uint32(k, 17)"}, {"bytes", "octet_length(v)"}}},
}

// pgRelations maps each record bucket to its relation; other buckets are
// rows of kv (pgRelationOf).
var pgRelations = func() map[string]*pgRelation {
	m := make(map[string]*pgRelation, len(recordTables))
	for _, t := range recordTables {
		m[string(t.bucket)] = t.relation()
	}
	return m
}()

// pgRelationOf returns the relation of a bucket.
func pgRelationOf(bucket string) *pgRelation {
	if r, ok := pgRelations[bucket]; ok {
		return r
	}
	return pgKV
}

// relation builds the statements of a record table.
func (t recordTable) relation() *pgRelation {
	table := string(t.bucket)
	names := make([]string, len(t.columns))
	exprs := make([]string, len(t.columns))
	sets := make([]string, len(t.columns))
	for i, c := range t.columns {
		names[i], exprs[i], sets[i] = c.name, c.expr, c.name+" = excluded."+c.name
	}
	rows := `unnest($1::bytea[], $2::bytea[]) AS u(k, v)`
	if t.json {
		// OFFSET 0 keeps the subquery from being merged into the
		// statement: merged, d is replaced by agentserver_doc(v) in each
		// column's expression, and a run's record was parsed 16 times
		// (2026-12-06: /runs/wait c50 820–1,052 runs/s instead of
		// 1,143–1,178 with the record parsed once).
		rows = `(SELECT k, v, agentserver_doc(v) AS d FROM ` + rows + ` OFFSET 0) s`
	}
	insert := fmt.Sprintf(`INSERT INTO %s (k, v, %s) SELECT k, v, %s FROM %s`,
		table, strings.Join(names, ", "), strings.Join(exprs, ", "), rows)
	get := `SELECT v FROM ` + table + ` WHERE k = $1`
	return &pgRelation{
		table:           table,
		getSQL:          get,
		getForUpdateSQL: get + ` FOR UPDATE`,
		tailSQL:         `DELETE FROM ` + table + ` WHERE k >= $1`,
		countSQL:        `SELECT count(*) FROM ` + table,
		fromSQL:         `SELECT k, v FROM ` + table + ` WHERE k >= $1 ORDER BY k LIMIT $2`,
		afterSQL:        `SELECT k, v FROM ` + table + ` WHERE k > $1 ORDER BY k LIMIT $2`,
		beforeSQL:       `SELECT k, v FROM ` + table + ` WHERE k < $1 ORDER BY k DESC LIMIT $2`,
		lastSQL:         `SELECT k, v FROM ` + table + ` ORDER BY k DESC LIMIT $1`,
		putManySQL:      insert + ` ON CONFLICT (k) DO UPDATE SET v = excluded.v, ` + strings.Join(sets, ", "),
		insertManySQL:   insert,
		deleteManySQL:   `DELETE FROM ` + table + ` WHERE k = ANY($1::bytea[])`,
		deleteRangesSQL: `DELETE FROM ` + table + ` t USING unnest($1::bytea[], $2::bytea[]) AS r(lo, hi) WHERE t.k >= r.lo AND t.k < r.hi`,
	}
}

// byRelation groups what a batch or a prefetch does by the relation of
// each bucket.
type byRelation[V any] map[*pgRelation]*V

// of returns the group of bucket's relation, creating it.
func (m byRelation[V]) of(bucket string) *V {
	rel := pgRelationOf(bucket)
	g := m[rel]
	if g == nil {
		g = new(V)
		m[rel] = g
	}
	return g
}

// sorted lists the relations in table order: two transactions then lock
// rows of different tables in the same order, and a prefetch's query text
// is the same for the same relations.
func (m byRelation[V]) sorted() []*pgRelation {
	rels := make([]*pgRelation, 0, len(m))
	for rel := range m {
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, func(a, b *pgRelation) int { return strings.Compare(a.table, b.table) })
	return rels
}

// prefetchQuery builds the one query of a prefetch (pgprefetch.go): per
// relation, a branch that reads the keys g asks for (locking their rows
// when forUpdate, as a point read of a write transaction does) and one
// that reads every key of the ranges (locking nothing), as rows (bucket,
// k, v). Relations come in table order, so the query's text is the same
// for the same relations.
func prefetchQuery(g gatheredReads, forUpdate bool) (string, []any) {
	type part struct {
		keyBuckets, rangeBuckets []string
		keys, lo, hi             [][]byte
	}
	parts := byRelation[part]{}
	for i, b := range g.pb {
		p := parts.of(b)
		p.keyBuckets, p.keys = append(p.keyBuckets, b), append(p.keys, g.pk[i])
	}
	for i, b := range g.rb {
		p := parts.of(b)
		p.rangeBuckets, p.lo, p.hi = append(p.rangeBuckets, b), append(p.lo, g.rlo[i]), append(p.hi, g.rhi[i])
	}

	var ctes, branches []string
	var args []any
	param := func(v any, typ string) string {
		args = append(args, v)
		return fmt.Sprintf("$%d::%s", len(args), typ)
	}
	for _, rel := range parts.sorted() {
		p := parts[rel]
		if len(p.keys) > 0 {
			var read string
			if rel.bucketed {
				read = fmt.Sprintf(`SELECT kv.bucket, kv.k, kv.v FROM kv WHERE (kv.bucket, kv.k) IN (SELECT * FROM unnest(%s, %s))`,
					param(p.keyBuckets, "text[]"), param(p.keys, "bytea[]"))
			} else {
				read = fmt.Sprintf(`SELECT '%s'::text, t.k, t.v FROM %s t WHERE t.k = ANY(%s)`, rel.table, rel.table, param(p.keys, "bytea[]"))
			}
			if forUpdate {
				name := fmt.Sprintf("keyed%d", len(ctes))
				ctes = append(ctes, name+` AS (`+read+` FOR UPDATE)`)
				read = `SELECT * FROM ` + name
			}
			branches = append(branches, read)
		}
		if len(p.lo) > 0 {
			// Both bounds of a range are index conditions: a range open at
			// its end would scan to the table's (or bucket's) end.
			if rel.bucketed {
				branches = append(branches, fmt.Sprintf(`SELECT s.bucket, s.k, s.v FROM unnest(%s, %s, %s) AS r(b, lo, hi)
	CROSS JOIN LATERAL (SELECT kv.bucket, kv.k, kv.v FROM kv WHERE kv.bucket = r.b AND kv.k >= r.lo AND kv.k < r.hi) s`,
					param(p.rangeBuckets, "text[]"), param(p.lo, "bytea[]"), param(p.hi, "bytea[]")))
			} else {
				branches = append(branches, fmt.Sprintf(`SELECT '%s'::text, s.k, s.v FROM unnest(%s, %s) AS r(lo, hi)
	CROSS JOIN LATERAL (SELECT t.k, t.v FROM %s t WHERE t.k >= r.lo AND t.k < r.hi) s`,
					rel.table, param(p.lo, "bytea[]"), param(p.hi, "bytea[]"), rel.table))
			}
		}
	}
	sql := strings.Join(branches, "\nUNION ALL ")
	if len(ctes) > 0 {
		sql = `WITH ` + strings.Join(ctes, ", ") + "\n" + sql
	}
	return sql, args
}
