package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// page describes where a list response sits in the full result.
type page struct {
	total int
	// next is the offset of the following page, or -1 on the last page.
	next int
}

func pagination(offset, limit, n, total int) page {
	p := page{total: total, next: -1}
	if limit > 0 && n == limit && offset+n < total {
		p.next = offset + n
	}
	return p
}

func (p page) setHeaders(h http.Header) {
	h.Set("X-Pagination-Total", strconv.Itoa(p.total))
	if p.next >= 0 {
		h.Set("X-Pagination-Next", strconv.Itoa(p.next))
	}
}

// checkSelect rejects select names outside allowed.
func checkSelect(fields []string, allowed []string) error {
	for _, f := range fields {
		if !slices.Contains(allowed, f) {
			return invalidf("select: unknown field " + quote(f) + "; allowed: " + strings.Join(allowed, ", "))
		}
	}
	return nil
}

// selectedList is a JSON list response with pagination headers, trimmed to
// the selected fields when select was given. It satisfies the strict
// response interfaces of every search route.
type selectedList[T any] struct {
	items  []T
	fields []string
	page   page
}

func (s selectedList[T]) write(w http.ResponseWriter) error {
	var body any = s.items
	if len(s.fields) > 0 {
		trimmed := make([]map[string]json.RawMessage, len(s.items))
		for i, it := range s.items {
			raw, err := json.Marshal(it)
			if err != nil {
				return err
			}
			var all map[string]json.RawMessage
			if err := json.Unmarshal(raw, &all); err != nil {
				return err
			}
			m := make(map[string]json.RawMessage, len(s.fields))
			for _, f := range s.fields {
				if v, ok := all[f]; ok {
					m[f] = v
				} else {
					m[f] = json.RawMessage("null")
				}
			}
			trimmed[i] = m
		}
		body = trimmed
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	s.page.setHeaders(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(raw)
	return err
}

// VisitSearchThreadsResponse writes the list.
func (s selectedList[T]) VisitSearchThreadsResponse(w http.ResponseWriter) error { return s.write(w) }

// VisitSearchAssistantsResponse writes the list.
func (s selectedList[T]) VisitSearchAssistantsResponse(w http.ResponseWriter) error {
	return s.write(w)
}

// VisitListThreadRunsResponse writes the list.
func (s selectedList[T]) VisitListThreadRunsResponse(w http.ResponseWriter) error { return s.write(w) }

// nextPtr is the X-Pagination-Next value for generated header structs.
func (p page) nextPtr() *int {
	if p.next < 0 {
		return nil
	}
	n := p.next
	return &n
}

// emptyPageIfZero returns no items when the query asked for limit=0. A
// query-string limit of 0 is a page of nothing, as SQL's LIMIT 0 on
// LangGraph Platform; the caller still looks the resource up (404 for a
// missing one) and counts the total.
func emptyPageIfZero[T any](items []T, limit int) []T {
	if limit == 0 {
		return []T{}
	}
	return items
}
