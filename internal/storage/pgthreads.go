package storage

import (
	"encoding/json"
	"fmt"
	"strings"
)

// On PostgreSQL a thread search is SQL over the threads table
// (migrations 6 and 7): the status and the order of creation through the
// indexes threads_status_created and threads_created, metadata containment
// (the caller's restriction included) through the GIN index
// threads_metadata. PostgreSQL keeps none of the embedded backend's
// threads_by_created, threads_by_status and threads_by_meta entries. What
// the table's columns do not answer (a filter on the values of the latest
// checkpoint, an order by updated_at, status or state_updated_at) is done
// on the matching records in Go, as the embedded backend does it, so both
// backends answer a query alike.

// searchThreadsSQL is SearchThreads on PostgreSQL; q's restriction is
// already folded into its metadata.
func (t *Tx) searchThreadsSQL(p *pgTxn, q ThreadQuery) ([]Thread, int, error) {
	from, args, err := threadSearchFrom(q)
	if err != nil {
		return nil, 0, err
	}
	order, inSQL := threadSearchOrder(q)
	if !inSQL {
		return t.searchThreadsInGo(p, q, from, args)
	}
	total, err := pgCollect[int](p, `SELECT count(*) `+from, args...)
	if err != nil {
		return nil, 0, err
	}
	if q.CountOnly {
		return nil, total[0], nil
	}
	sql := `SELECT v ` + from + ` ORDER BY ` + order
	if q.Limit > 0 {
		args = append(args, q.Limit)
		sql += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	if q.Offset > 0 {
		args = append(args, q.Offset)
		sql += fmt.Sprintf(` OFFSET $%d`, len(args))
	}
	page, err := decodeThreads(p, sql, args)
	return page, total[0], err
}

// searchThreadsInGo loads every thread the SQL conditions match and
// filters, sorts and pages them as the embedded backend does.
func (t *Tx) searchThreadsInGo(p *pgTxn, q ThreadQuery, from string, args []any) ([]Thread, int, error) {
	loaded, err := decodeThreads(p, `SELECT v `+from, args)
	if err != nil {
		return nil, 0, err
	}
	matched := loaded[:0]
	for _, th := range loaded {
		if t.threadMatches(th, q) {
			matched = append(matched, th)
		}
	}
	sortThreads(matched, q.SortBy, q.Desc)
	if q.CountOnly {
		return nil, len(matched), nil
	}
	return pageOf(matched, q.Offset, q.Limit), len(matched), nil
}

// threadSearchFrom is the FROM and WHERE of a thread search, with its
// arguments.
func threadSearchFrom(q ThreadQuery) (string, []any, error) {
	var where []string
	var args []any
	param := func(v any, cast string) string {
		args = append(args, v)
		return fmt.Sprintf("$%d%s", len(args), cast)
	}
	if len(q.IDs) > 0 {
		ids := make([]string, len(q.IDs))
		for i, id := range q.IDs {
			ids[i] = id.String()
		}
		where = append(where, `thread_id = ANY(`+param(ids, "::uuid[]")+`)`)
	}
	if q.Status != "" {
		where = append(where, `status = `+param(q.Status, "::text"))
	}
	if len(q.Metadata) > 0 {
		doc, err := json.Marshal(q.Metadata)
		if err != nil {
			return "", nil, err
		}
		where = append(where, `metadata @> `+param(string(doc), "::jsonb"))
	}
	from := `FROM threads`
	if len(where) > 0 {
		from += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return from, args, nil
}

// threadSearchOrder is the ORDER BY of a search whose order and filters
// the table answers; inSQL is false when they need the records.
func threadSearchOrder(q ThreadQuery) (order string, inSQL bool) {
	if len(q.Values) > 0 {
		return "", false
	}
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	switch q.SortBy {
	case "", "created_at":
		return "created_ns" + dir + ", thread_id" + dir, true
	case "thread_id":
		return "thread_id" + dir, true
	}
	return "", false
}

// decodeThreads runs a query of thread records and decodes them.
func decodeThreads(p *pgTxn, sql string, args []any) ([]Thread, error) {
	raws, err := p.values(sql, args...)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, len(raws))
	for i, raw := range raws {
		if err := decode(raw, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
