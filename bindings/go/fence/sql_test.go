// SPDX-License-Identifier: BSD-3-Clause

// The database/sql side on a real PostgreSQL (pgx's stdlib driver): the
// edge cases of tests/python/test_fence_sql.py, in Go.

package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/fence"
)

// table makes a fresh table (id, name, qty, fence) and returns its name.
func table(t *testing.T) (*sql.DB, string) {
	t.Helper()
	db, err := sql.Open("pgx", pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tbl := name(t) // quoted: the '-' are kept
	if _, err := db.Exec(`CREATE TABLE "` + tbl + `" (id bigint PRIMARY KEY, name text, qty int, fence bigint)`); err != nil {
		t.Fatalf("%v (is PostgreSQL from tests/harness/pgserver.py up?)", err)
	}
	return db, tbl
}

type row struct {
	name  sql.NullString
	qty   sql.NullInt64
	fence sql.NullInt64
}

func read(t *testing.T, db *sql.DB, tbl string, id int) row {
	t.Helper()
	var r row
	if err := db.QueryRow(`SELECT name, qty, fence FROM "`+tbl+`" WHERE id = $1`, id).Scan(&r.name, &r.qty, &r.fence); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestUpsert(t *testing.T) {
	ctx := context.Background()
	db, tbl := table(t)
	key := fence.Cols("id", 17)
	if err := fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "a", "qty", 1), 10); err != nil { // first write: no row
		t.Fatal(err)
	}
	if r := read(t, db, tbl, 17); r.name.String != "a" || r.fence.Int64 != 10 {
		t.Fatalf("row after the first write: %+v", r)
	}
	if err := fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "b", "qty", 2), 10); err != nil { // equal token
		t.Fatalf("equal token refused: %v", err)
	}
	err := fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "late", "qty", 9), 9)
	refused(t, err, 9, 10)
	if r := read(t, db, tbl, 17); r.name.String != "b" || r.qty.Int64 != 2 || r.fence.Int64 != 10 {
		t.Fatalf("a refused upsert changed the row: %+v", r)
	}
	top := uint64(math.MaxInt64)
	if err := fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "top", "qty", 3), top); err != nil {
		t.Fatalf("token 2^63-1: %v", err)
	}
	refused(t, fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "late", "qty", 0), top-1), top-1, top)
	if err := fence.Upsert(ctx, db, tbl, key, fence.Cols("name", "x", "qty", 0), top+1); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("token 2^63 (above BIGINT): want ErrInvalid, got %v", err)
	}
	// A NULL fence (a row written before fencing) takes any token.
	if _, err := db.Exec(`INSERT INTO "` + tbl + `" (id, name, qty) VALUES (18, 'old', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := fence.Upsert(ctx, db, tbl, fence.Cols("id", 18), fence.Cols("name", "new"), 1); err != nil {
		t.Fatalf("upsert over a NULL fence: %v", err)
	}
	if r := read(t, db, tbl, 18); r.name.String != "new" || r.qty.Int64 != 0 || r.fence.Int64 != 1 {
		t.Fatalf("row: %+v", r)
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	db, tbl := table(t)
	key := fence.Cols("id", 1)
	err := fence.Update(ctx, db, tbl, key, fence.Cols("name", "a"), 5)
	if !errors.Is(err, fence.ErrNoRow) || !errors.Is(err, sql.ErrNoRows) || errors.Is(err, redlock.ErrFenced) {
		t.Fatalf("update of a missing row: want ErrNoRow, got %v", err)
	}
	if _, err := db.Exec(`INSERT INTO "` + tbl + `" (id, name, qty) VALUES (1, 'pre', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := fence.Update(ctx, db, tbl, key, fence.Cols("name", "a", "qty", 1), 10); err != nil { // NULL fence
		t.Fatal(err)
	}
	if err := fence.Update(ctx, db, tbl, key, fence.Cols("qty", 2), 10); err != nil { // equal
		t.Fatal(err)
	}
	refused(t, fence.Update(ctx, db, tbl, key, fence.Cols("name", "late"), 9), 9, 10)
	// Empty values raise the fence only: the new holder before it reads.
	if err := fence.Update(ctx, db, tbl, key, nil, 12); err != nil {
		t.Fatal(err)
	}
	refused(t, fence.Update(ctx, db, tbl, key, fence.Cols("name", "late"), 11), 11, 12)
	if r := read(t, db, tbl, 1); r.name.String != "a" || r.qty.Int64 != 2 || r.fence.Int64 != 12 {
		t.Fatalf("row: %+v", r)
	}
	if err := fence.Update(ctx, db, tbl, key, nil, 1<<63); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("token 2^63: want ErrInvalid, got %v", err)
	}
}

func TestSQLNamesAndTransactions(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A schema-qualified table, quotes and spaces in names, a two-column key
	// and another fence column.
	for _, q := range []string{`CREATE SCHEMA IF NOT EXISTS "my schema"`,
		`DROP TABLE IF EXISTS "my schema"."we""ird"`,
		`CREATE TABLE "my schema"."we""ird" ("shop id" int, "sku" text, "the ""qty""" int, tok bigint, PRIMARY KEY ("shop id", sku))`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tbl, key := `my schema.we"ird`, fence.Cols("shop id", 3, "sku", "A-1")
	fc := fence.WithFenceColumn("tok")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Upsert(ctx, tx, tbl, key, fence.Cols(`the "qty"`, 5), 7, fc); err != nil {
		t.Fatal(err)
	}
	refused(t, fence.Upsert(ctx, tx, tbl, key, fence.Cols(`the "qty"`, 6), 6, fc), 6, 7)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := fence.Update(ctx, db, tbl, key, fence.Cols(`the "qty"`, 8), 8, fc); err != nil {
		t.Fatal(err)
	}
	var qty, tok int64
	if err := db.QueryRow(`SELECT "the ""qty""", tok FROM "my schema"."we""ird"`).Scan(&qty, &tok); err != nil || qty != 8 || tok != 8 {
		t.Fatalf("row: qty %d tok %d, %v", qty, tok, err)
	}
	for _, c := range []struct {
		table       string
		key, values []fence.Column
		token       uint64
	}{
		{tbl, key, fence.Cols("tok", 1), 9},             // the fence column among the values
		{tbl, key, fence.Cols("sku", "B"), 9},           // a key column among the values
		{"", key, fence.Cols("x", 1), 9},                // no table
		{tbl, nil, fence.Cols("x", 1), 9},               // no key
		{tbl, key, nil, 9},                              // nothing to upsert
		{tbl, key, fence.Cols(`the "qty"`, 1), 0},       // token 0
		{"s..t", key, fence.Cols("x", 1), 9},            // an empty part of a dotted name
		{tbl, key, fence.Cols("a\x00b", 1), 9},          // a NUL, which C would cut the name at
		{tbl, fence.Cols("", 1), fence.Cols("x", 1), 9}, // an empty column name
	} {
		if err := fence.Upsert(ctx, db, c.table, c.key, c.values, c.token, fc); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Upsert(%q, %v, %v, %d): want ErrInvalid, got %v", c.table, c.key, c.values, c.token, err)
		}
	}
}

// A lock's token protecting a row.
func TestSQLWithALocksToken(t *testing.T) {
	ctx := context.Background()
	db, tbl := table(t)
	c, err := redlock.NewClient(nodeURLs, redlock.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.NewMutex(tbl)
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	t1 := m.Token()
	m.Unlock()
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock()
	if err := fence.Upsert(ctx, db, tbl, fence.Cols("id", 1), fence.Cols("qty", 1), m.Token()); err != nil {
		t.Fatal(err)
	}
	refused(t, fence.Upsert(ctx, db, tbl, fence.Cols("id", 1), fence.Cols("qty", 2), t1), t1, m.Token())
}
