package storage

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrationFiles are the PostgreSQL schema migrations, NNNN_name.sql,
// applied in version order.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range paths {
		name := strings.TrimPrefix(p, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive version and '_'", name)
		}
		body, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate brings the schema of the connection's search path up to the
// newest embedded migration in one transaction, under the writers' advisory
// lock so that servers starting together apply each migration once. A
// database that records a version this build does not know is refused.
//
// Since everything happens in tx, a migration interrupted half way (an
// error, a lost connection, a killed process) leaves nothing: not the
// tables it created, nor those of the migrations before it in the same
// open, nor their rows in schema_migrations; the next open starts again
// from the last migration an earlier open committed.
func migrate(ctx context.Context, tx pgx.Tx) error {
	all, err := loadMigrations()
	if err != nil {
		return err
	}
	return applyMigrations(ctx, tx, all)
}

// applyMigrations applies those of all (in version order) that the
// schema lacks, in tx.
func applyMigrations(ctx context.Context, tx pgx.Tx, all []migration) error {
	if _, err := tx.Exec(ctx, migrationLockSQL); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var applied int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if newest := all[len(all)-1].version; applied > newest {
		return fmt.Errorf("%w: database has migration %d, build has %d", ErrSchemaTooNew, applied, newest)
	}
	for _, m := range all {
		if m.version <= applied {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.name, err)
		}
	}
	return nil
}
