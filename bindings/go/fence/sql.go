// SPDX-License-Identifier: BSD-3-Clause

// Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): one PostgreSQL
// statement that writes a row only while the caller's token is at least
// the row's fence column (or the column is NULL: the first fenced write),
// and raises the column to the token.

package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

func ident(name, what string) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", invalid("%s must be a non-empty name without NUL, got %q", what, name)
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if p == "" {
			return "", invalid("%s %q has an empty part", what, name)
		}
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, "."), nil
}

type stmt struct {
	table, fence string
	kcols, vcols []string
	kvals, vvals []any
	token        int64
	display      string
}

func prepare(table string, key, values []Column, token uint64, emptyValues bool, opts []SQLOption) (*stmt, error) {
	c := sqlConfig{fence: "fence"}
	for _, o := range opts {
		o(&c)
	}
	if token == 0 {
		return nil, invalid("token must be at least 1, got 0 (a lock made without WithFencing, or not held?)")
	}
	if token > math.MaxInt64 {
		return nil, invalid("token %d does not fit a BIGINT fence column (at most 2^63-1)", token)
	}
	if len(key) == 0 {
		return nil, invalid("key must name at least one column")
	}
	if len(values) == 0 && !emptyValues {
		return nil, invalid("values must name at least one column")
	}
	s := &stmt{token: int64(token)}
	var err error
	if s.table, err = ident(table, "table"); err != nil {
		return nil, err
	}
	if s.fence, err = ident(c.fence, "fence column"); err != nil {
		return nil, err
	}
	seen := map[string]bool{c.fence: true}
	var desc []string
	for i, cols := range [][]Column{key, values} {
		for _, col := range cols {
			if seen[col.Name] {
				return nil, invalid("column %q named twice (key, values, fence)", col.Name)
			}
			seen[col.Name] = true
			q, err := ident(col.Name, "column")
			if err != nil {
				return nil, err
			}
			if i == 0 {
				s.kcols, s.kvals = append(s.kcols, q), append(s.kvals, col.Value)
				desc = append(desc, fmt.Sprintf("%s=%v", col.Name, col.Value))
			} else {
				s.vcols, s.vvals = append(s.vcols, q), append(s.vvals, col.Value)
			}
		}
	}
	s.display = table + " (" + strings.Join(desc, ", ") + ")"
	return s, nil
}

// refused says why a write changed no row: the fence that refused it, or
// no such row.
func (s *stmt) refused(ctx context.Context, db DB) error {
	where := make([]string, len(s.kcols))
	for i, c := range s.kcols {
		where[i] = c + " = $" + strconv.Itoa(i+1)
	}
	var seen sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT "+s.fence+" FROM "+s.table+" WHERE "+strings.Join(where, " AND "),
		s.kvals...).Scan(&seen)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", s.display, ErrNoRow)
	}
	if err != nil {
		return err
	}
	// A NULL or not older fence here means the row changed between the two
	// statements; the refusal still stands, with the fence seen now.
	return &StaleTokenError{Resource: s.display, Token: uint64(s.token), Fence: uint64(max(seen.Int64, 0)),
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
	s, err := prepare(table, key, values, token, false, opts)
	if err != nil {
		return err
	}
	cols := append(append(append([]string{}, s.kcols...), s.vcols...), s.fence)
	marks := make([]string, len(cols))
	for i := range marks {
		marks[i] = "$" + strconv.Itoa(i+1)
	}
	sets := make([]string, 0, len(s.vcols)+1)
	for _, c := range append(append([]string{}, s.vcols...), s.fence) {
		sets = append(sets, c+" = EXCLUDED."+c)
	}
	q := "INSERT INTO " + s.table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(marks, ", ") +
		") ON CONFLICT (" + strings.Join(s.kcols, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ") +
		" WHERE " + s.table + "." + s.fence + " IS NULL OR " + s.table + "." + s.fence + " <= EXCLUDED." + s.fence
	args := append(append(append([]any{}, s.kvals...), s.vvals...), s.token)
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
	s, err := prepare(table, key, values, token, true, opts)
	if err != nil {
		return err
	}
	n := 0
	next := func() string { n++; return "$" + strconv.Itoa(n) }
	sets := make([]string, 0, len(s.vcols)+1)
	for _, c := range s.vcols {
		sets = append(sets, c+" = "+next())
	}
	tok := next()
	sets = append(sets, s.fence+" = "+tok)
	where := make([]string, len(s.kcols))
	for i, c := range s.kcols {
		where[i] = c + " = " + next()
	}
	q := "UPDATE " + s.table + " SET " + strings.Join(sets, ", ") + " WHERE " + strings.Join(where, " AND ") +
		" AND (" + s.fence + " IS NULL OR " + s.fence + " <= " + tok + ")"
	args := append(append(append([]any{}, s.vvals...), s.token), s.kvals...)
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, err := affected(res); err != nil || n > 0 {
		return err
	}
	return s.refused(ctx, db)
}
