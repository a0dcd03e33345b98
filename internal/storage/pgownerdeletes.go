package storage

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Owner deletes: removing every row of an owner from a table keyed by it
// (a run's events and subagent records, a thread's events) is gathered
// per table and sent as one statement per round trip, the owners as an
// array, instead of one statement per owner: a batch of stateless runs
// that ends N threads costs the server three statements, not 3N.
//
// Order: the gathered deletes are queued ahead of any other statement
// queued after them (queue sends them first), and a round trip sends them
// before its query, so every statement of the transaction sees them
// applied in the order the transaction made them. The overlay's batched
// point writes follow them, which is correct since they touch other
// tables.

// ownerTable is a table whose rows belong to an owner: deleteManySQL
// deletes those of every owner in its one argument, a uuid array.
type ownerTable struct {
	deleteManySQL string
}

// newOwnerTable describes table, whose owner column is owner.
func newOwnerTable(table, owner string) *ownerTable {
	return &ownerTable{deleteManySQL: `DELETE FROM ` + table + ` WHERE ` + owner + ` = ANY($1::uuid[])`}
}

// ownerDeletes are the owners gathered per table since the last send, in
// the order the tables were first named.
type ownerDeletes struct {
	tables []*ownerTable
	owners [][]pgtype.UUID
}

// add gathers the deletion of owner's rows of table.
func (d *ownerDeletes) add(table *ownerTable, owner uuid.UUID) {
	for i, tb := range d.tables {
		if tb == table {
			d.owners[i] = append(d.owners[i], pgUUID(owner))
			return
		}
	}
	d.tables = append(d.tables, table)
	d.owners = append(d.owners, []pgtype.UUID{pgUUID(owner)})
}

// queue queues the gathered deletes on b, one statement per table, and
// forgets them.
func (d *ownerDeletes) queue(b *pgx.Batch) {
	for i, tb := range d.tables {
		b.Queue(tb.deleteManySQL, d.owners[i])
	}
	d.tables, d.owners = d.tables[:0], d.owners[:0]
}

// deleteOwned gathers the deletion of every row of owner in table.
func (t *pgTxn) deleteOwned(table *ownerTable, owner uuid.UUID) error {
	if t.err != nil {
		return t.err
	}
	if t.readOnly {
		return errReadOnly
	}
	t.ownerDeletes.add(table, owner)
	t.writes++
	return nil
}
