package storage

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentserver/internal/testutil/pgtest"
)

// Opening applies the migrations once and records them; a database whose
// migrations are newer than the build is refused.
func TestPostgresMigrations(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	url := pgtest.FreshSchema(t)
	for range 2 { // the second open finds everything applied
		db, err := OpenPostgres(url, Options{})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	all, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	be, err := openPostgres(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	ctx := context.Background()
	var n, newest int
	if err := be.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &newest); err != nil {
		t.Fatal(err)
	}
	if n != len(all) || newest != all[len(all)-1].version {
		t.Fatalf("schema_migrations has %d rows up to %d, want %d up to %d", n, newest, len(all), all[len(all)-1].version)
	}
	if _, err := be.pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (99999, 'from_the_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPostgres(url, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// A read that fails on PostgreSQL fails its transaction with the database's
// error: the caller never mistakes it for a missing record.
func TestPostgresFailedReadFailsTheTransaction(t *testing.T) {
	db := openPostgresOrSkip(t)
	be := db.be.(*pgBackend)
	if _, err := be.pool.Exec(context.Background(), `ALTER TABLE threads RENAME TO threads_away`); err != nil {
		t.Fatal(err)
	}
	th := newThread(nil, "idle")
	err := db.View(context.Background(), func(tx *Tx) error {
		_, err := tx.GetThread(th.ThreadID)
		return err
	})
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "threads") {
		t.Fatalf("view over a missing table: %v, want the database's error", err)
	}
	err = db.Update(context.Background(), func(tx *Tx) error {
		if tx.ThreadExists(th.ThreadID) {
			return errors.New("exists")
		}
		return ErrConflict
	})
	if err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("update over a missing table: %v, want the database's error", err)
	}
}

// Several servers share one schema: a write committed by one is announced
// to every one of them (its sender told apart), and servers on another
// schema hear nothing of it.
func TestPostgresReplicasShareASchemaAndHearItsNotices(t *testing.T) {
	dbs := openReplicasOrSkip(t, 2)
	first, second := dbs[0], dbs[1]
	other, err := OpenPostgres(pgtest.FreshSchema(t), Options{})
	if err != nil {
		t.Fatalf("a server on another schema: %v", err)
	}
	defer other.Close()
	heard := func(db *DB) chan Notice {
		ch := make(chan Notice, 16)
		db.OnNotice(func(n Notice) { ch <- n })
		return ch
	}
	atFirst, atSecond, atOther := heard(first), heard(second), heard(other)
	run := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: uuid.Must(uuid.NewV7()), Status: RunPending, NotBefore: time.Now()}
	if err := first.Update(context.Background(), func(tx *Tx) error { return tx.PutRun(run) }); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan Notice{"sender": atFirst, "other replica": atSecond} {
		select {
		case n := <-ch:
			if !n.Wake || n.Local != (name == "sender") {
				t.Fatalf("%s heard %+v, want a wake-up (local: %v)", name, n, name == "sender")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s heard nothing", name)
		}
	}
	// The other schema's listener hears its own writes only.
	if err := other.Update(context.Background(), func(tx *Tx) error { return tx.DeleteRun(run.RunID) }); err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := other.Update(context.Background(), func(tx *Tx) error { return tx.PutRun(run) }); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-atOther:
		if !n.Local {
			t.Fatalf("the other schema heard %+v, not from its own write", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other schema heard nothing of its own write")
	}
}

// An unreachable PostgreSQL server is reported on one line that names the
// URL without its password.
func TestPostgresOpenErrorIsOneLineWithoutPassword(t *testing.T) {
	_, err := OpenPostgres("postgres://agent:s3cret@127.0.0.1:1/agents?connect_timeout=5", Options{})
	if err == nil {
		t.Fatal("opened a database on port 1")
	}
	msg := err.Error()
	if strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "open database postgres://agent:xxxxx@127.0.0.1:1/agents") {
		t.Fatalf("error = %q", msg)
	}
}

// A port that accepts connections and never answers (a stalled server, a
// wrong service) fails the open within the connect timeout, on one line
// that says so, instead of hanging.
func TestPostgresOpenSilentServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	began := time.Now()
	_, err = OpenPostgres("postgres://agent@"+ln.Addr().String()+"/agents?connect_timeout=1", Options{})
	took := time.Since(began)
	if err == nil {
		t.Fatal("opened a database on a silent port")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "no answer within 1s") {
		t.Fatalf("error = %q", msg)
	}
	if took > 30*time.Second {
		t.Fatalf("the open took %s", took)
	}
}

// Without connect_timeout in the URL, each attempt is bounded by the
// default.
func TestPostgresDefaultConnectTimeout(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://agent@127.0.0.1:1/agents")
	if err != nil {
		t.Fatal(err)
	}
	applyPoolDefaults(cfg, Options{})
	if got := cfg.ConnConfig.ConnectTimeout; got != defaultConnectTimeout {
		t.Fatalf("connect timeout = %s, want %s", got, defaultConnectTimeout)
	}
}
