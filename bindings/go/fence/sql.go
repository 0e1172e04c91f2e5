// SPDX-License-Identifier: BSD-3-Clause

// Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): one PostgreSQL
// statement that writes a row only while the caller's token is at least
// the row's fence column (or the column is NULL: the first fenced write),
// and raises the column to the token. The statements, their quoting and
// their checks are the C library's (redlock.FenceSQL), as every binding's
// are; only the values and the connection are handled here.

package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// DB is what Upsert and Update run on: a *sql.DB, *sql.Tx or *sql.Conn.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Column is one column's name and value. Names are quoted as identifiers
// ("schema.table" is two); values are passed as parameters.
type Column struct {
	Name  string
	Value any
}

// Cols makes columns from name, value pairs: Cols("id", 17, "qty", 3).
// It panics on an odd count or a name that is not a string.
func Cols(nameValue ...any) []Column {
	if len(nameValue)%2 != 0 {
		panic("fence.Cols: odd number of arguments")
	}
	out := make([]Column, 0, len(nameValue)/2)
	for i := 0; i < len(nameValue); i += 2 {
		name, ok := nameValue[i].(string)
		if !ok {
			panic(fmt.Sprintf("fence.Cols: column name %v is a %T, not a string", nameValue[i], nameValue[i]))
		}
		out = append(out, Column{name, nameValue[i+1]})
	}
	return out
}

// ErrNoRow is returned (wrapped, with the table and key) by Update when
// there is no row with the key; it also matches sql.ErrNoRows.
var ErrNoRow = fmt.Errorf("fence: no such row to update (Upsert makes one): %w", sql.ErrNoRows)

// SQLOption changes Upsert and Update.
type SQLOption func(*sqlConfig)

type sqlConfig struct{ fence string }

// WithFenceColumn names the BIGINT column holding the row's fence
// (default "fence").
func WithFenceColumn(name string) SQLOption { return func(c *sqlConfig) { c.fence = name } }

type stmt struct {
	table, fence string
	kcols, vcols []string
	kvals, vvals []any
	token        uint64
	display      string
}

func prepare(table string, key, values []Column, token uint64, opts []SQLOption) (*stmt, error) {
	c := sqlConfig{fence: "fence"}
	for _, o := range opts {
		o(&c)
	}
	if c.fence == "" {
		// The C builder reads "" as its default; an explicit empty name is a mistake.
		return nil, invalid("fence column must be a non-empty name")
	}
	s := &stmt{table: table, fence: c.fence, token: token}
	var desc []string
	for _, col := range key {
		s.kcols, s.kvals = append(s.kcols, col.Name), append(s.kvals, col.Value)
		desc = append(desc, fmt.Sprintf("%s=%v", col.Name, col.Value))
	}
	for _, col := range values {
		s.vcols, s.vvals = append(s.vcols, col.Name), append(s.vvals, col.Value)
	}
	s.display = table + " (" + strings.Join(desc, ", ") + ")"
	return s, nil
}

// sql is the statement's text, built and checked (names, clashes, the
// token's range) by the C library, with PostgreSQL's $n placeholders.
func (s *stmt) sql(kind redlock.FenceSQLStatement) (string, error) {
	q, err := redlock.FenceSQL(kind, redlock.PlaceholderDollar, s.table, s.kcols, s.vcols, s.fence, s.token)
	if err != nil {
		return "", fmt.Errorf("fence: %w", err)
	}
	return q, nil
}

// refused says why a write changed no row: the fence that refused it, or
// no such row.
func (s *stmt) refused(ctx context.Context, db DB) error {
	q, err := s.sql(redlock.FenceSQLRead)
	if err != nil {
		return err
	}
	var seen sql.NullInt64
	err = db.QueryRowContext(ctx, q, s.kvals...).Scan(&seen)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", s.display, ErrNoRow)
	}
	if err != nil {
		return err
	}
	// A NULL or not older fence here means the row changed between the two
	// statements; the refusal still stands, with the fence seen now.
	return &StaleTokenError{Resource: s.display, Token: s.token, Fence: uint64(max(seen.Int64, 0)),
		Detail: fmt.Sprintf("FENCED %d %d", s.token, seen.Int64)}
}

func affected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("fence: the driver cannot count affected rows: %w", err)
	}
	return n, nil
}

// Upsert inserts the row key + values with the fence column set to token,
// or, if a row with key exists and its fence is at most token (or NULL),
// updates it to values and token, in one PostgreSQL statement:
//
//	INSERT INTO t (k, v, fence) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE
//	SET v = EXCLUDED.v, fence = EXCLUDED.fence
//	WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence
//
// A row whose fence is above token is left as it is and a
// *StaleTokenError names both. key's columns must be the table's primary
// key or a unique index. The token must fit a BIGINT (at most 2^63-1).
// db is a *sql.DB, *sql.Tx or *sql.Conn; in a transaction, the caller
// commits.
func Upsert(ctx context.Context, db DB, table string, key, values []Column, token uint64, opts ...SQLOption) error {
	s, err := prepare(table, key, values, token, opts)
	if err != nil {
		return err
	}
	q, err := s.sql(redlock.FenceSQLUpsert)
	if err != nil {
		return err
	}
	args := append(append(append([]any{}, s.kvals...), s.vvals...), int64(s.token))
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil || n > 0 {
		return err
	}
	return s.refused(ctx, db)
}

// Update updates the existing row key to values and the fence column to
// token if its fence is at most token (or NULL: the first fenced write):
//
//	UPDATE t SET v = $1, fence = $2 WHERE k = $3 AND (fence IS NULL OR fence <= $2)
//
// A later holder's token there gives a *StaleTokenError; no row with key
// gives an error matching ErrNoRow (and sql.ErrNoRows): a fenced update
// does not make one, Upsert does. Empty values only raise the fence, as a
// new holder does before it reads the row, so that the previous holder's
// late write fails from then on.
func Update(ctx context.Context, db DB, table string, key, values []Column, token uint64, opts ...SQLOption) error {
	s, err := prepare(table, key, values, token, opts)
	if err != nil {
		return err
	}
	q, err := s.sql(redlock.FenceSQLUpdate)
	if err != nil {
		return err
	}
	// $n names the token twice (SET and WHERE); it is passed once.
	args := append(append(append([]any{}, s.vvals...), int64(s.token)), s.kvals...)
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil || n > 0 {
		return err
	}
	return s.refused(ctx, db)
}
