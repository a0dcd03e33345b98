package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

func newAssistant(id uuid.UUID, version int, meta map[string]any) Assistant {
	now := time.Now().UTC()
	return Assistant{
		AssistantID: id, GraphID: "echo", Config: map[string]any{}, Context: map[string]any{},
		CreatedAt: now, UpdatedAt: now, Metadata: meta, Version: version, Name: "a",
	}
}

func TestAssistantRecordAndVersions(t *testing.T) { forEachBackend(t, testAssistantRecordAndVersions) }

func testAssistantRecordAndVersions(t *testing.T, db *DB) {
	ctx := context.Background()
	id := uuid.MustParse("11111111-1111-1111-1111-111111111111")
	// A neighbour whose key sorts right after id: deleting id must not touch it.
	next := uuid.MustParse("11111111-1111-1111-1111-111111111112")
	desc := "first"
	err := db.Update(ctx, func(tx *Tx) error {
		for v := 1; v <= 5; v++ {
			a := newAssistant(id, v, map[string]any{"v": float64(v), "odd": v%2 == 1})
			a.Description = &desc
			if err := tx.PutAssistantVersion(a); err != nil {
				return err
			}
			if err := tx.PutAssistant(a); err != nil {
				return err
			}
		}
		n := newAssistant(next, 1, map[string]any{})
		if err := tx.PutAssistantVersion(n); err != nil {
			return err
		}
		return tx.PutAssistant(n)
	})
	if err != nil {
		t.Fatal(err)
	}

	err = db.View(context.Background(), func(tx *Tx) error {
		a, err := tx.GetAssistant(id)
		if err != nil {
			return err
		}
		if a.Version != 5 || a.Description == nil || *a.Description != "first" {
			t.Errorf("current = %+v", a)
		}
		if got := tx.MaxAssistantVersion(id); got != 5 {
			t.Errorf("max version = %d, want 5", got)
		}
		if got := tx.MaxAssistantVersion(uuid.New()); got != 0 {
			t.Errorf("max version of unknown = %d, want 0", got)
		}
		v3, err := tx.GetAssistantVersion(id, 3)
		if err != nil || v3.Version != 3 || v3.Metadata["v"] != float64(3) {
			t.Errorf("version 3 = %+v, %v", v3, err)
		}
		for _, v := range []int{0, 6, -1} {
			if _, err := tx.GetAssistantVersion(id, v); !errors.Is(err, ErrNotFound) {
				t.Errorf("version %d: err = %v, want ErrNotFound", v, err)
			}
		}
		if _, err := tx.GetAssistant(uuid.New()); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown assistant: err = %v, want ErrNotFound", err)
		}
		all, err := tx.ListAssistants()
		if err != nil || len(all) != 2 || all[0].AssistantID != id || all[1].AssistantID != next {
			t.Errorf("list = %+v, %v", all, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name          string
		meta          map[string]any
		limit, offset int
		want          []int
		total         int
	}{
		{"all", nil, 0, 0, []int{5, 4, 3, 2, 1}, 5},
		{"limit", nil, 2, 0, []int{5, 4}, 5},
		{"offset", nil, 2, 3, []int{2, 1}, 5},
		{"past end", nil, 2, 9, nil, 5},
		{"filter", map[string]any{"odd": true}, 0, 0, []int{5, 3, 1}, 3},
		{"filter paged", map[string]any{"odd": true}, 1, 1, []int{3}, 3},
		{"no match", map[string]any{"v": "x"}, 0, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Assistant
			var total int
			err := db.View(context.Background(), func(tx *Tx) error {
				var err error
				got, total, err = tx.ListAssistantVersions(id, tc.meta, tc.limit, tc.offset)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if total != tc.total || len(got) != len(tc.want) {
				t.Fatalf("got %d versions (total %d), want %v (total %d)", len(got), total, tc.want, tc.total)
			}
			for i, a := range got {
				if a.Version != tc.want[i] {
					t.Fatalf("versions[%d] = %d, want %v", i, a.Version, tc.want)
				}
			}
		})
	}

	// Versions are immutable.
	err = db.Update(ctx, func(tx *Tx) error { return tx.PutAssistantVersion(newAssistant(id, 2, nil)) })
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("rewrite version: err = %v, want ErrConflict", err)
	}
	err = db.Update(ctx, func(tx *Tx) error { return tx.PutAssistantVersion(newAssistant(id, 0, nil)) })
	if err == nil {
		t.Fatal("version 0 accepted")
	}

	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteAssistant(id) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteAssistant(id) }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: err = %v, want ErrNotFound", err)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		if tx.AssistantExists(id) {
			t.Error("deleted assistant still exists")
		}
		if vs, total, _ := tx.ListAssistantVersions(id, nil, 0, 0); len(vs) != 0 || total != 0 {
			t.Errorf("deleted assistant still has %d versions", total)
		}
		if !tx.AssistantExists(next) || tx.MaxAssistantVersion(next) != 1 {
			t.Error("neighbour assistant was touched by delete")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
