// Package crons runs cron jobs: run payloads created on a schedule, on a
// thread of the client's or (stateless crons) on a new thread each time.
//
// # Scheduling
//
// The Scheduler goroutine, owned by the server, sleeps on a timer until the
// earliest next_run_date of any enabled cron (the crons_by_due index of
// package storage) or until a cron is created, changed or deleted; it never
// polls. When it wakes it fires every due cron: batches of up to 256 read
// from the index, 32 firings of a batch in flight at once, each its own
// transaction, so that their commits share the database's group commit
// (10,000 crons due at once fire in under 10 s; docs/benchmarks.md).
//
// # Invariants
//
//   - Exactly once per firing: a firing is claimed (the cron's
//     next_run_date moves past now) in the same transaction that stores its
//     run, through runs.Service.CreateGuarded. A crash before the commit
//     leaves the cron due and no run; after it, the run and the moved date.
//     Two schedulers racing for a firing cannot both claim it.
//   - A missed firing runs once: the next date is the first one after the
//     time of firing, so firings missed while the server was down collapse
//     into the one that runs at start.
//   - A firing that cannot make its run (its assistant was deleted, its
//     thread refuses it) is skipped: the date still moves on, and the
//     failure is logged.
//   - A cron past its end_time, or whose schedule never fires again, keeps
//     its record with next_run_date null and is not fired.
//   - Runs made by a cron carry metadata.cron_id.
//   - Schedules are checked when a cron is created or changed
//     (ParseSchedule): a seconds field, and an "@every" interval under a
//     minute, only with seconds enabled; an interval that is not a
//     positive whole number of seconds never. A stored cron is read without
//     these rules (parseStored), so that a restart with other settings does
//     not stop it from moving on.
package crons
