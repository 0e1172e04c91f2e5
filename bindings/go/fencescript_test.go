// SPDX-License-Identifier: BSD-3-Clause

package redlock_test

import (
	"errors"
	"strings"
	"testing"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// FenceRefusal reads the script's refusal through the C library: both
// tokens as 64-bit integers (above 2^53 too), and nothing else taken for one.
func TestFenceRefusal(t *testing.T) {
	tok, fence, ok := redlock.FenceRefusal("FENCED 9007199254740993 18446744073709551615 token 9007199254740993 is older")
	if !ok || tok != 9007199254740993 || fence != 18446744073709551615 {
		t.Fatalf("FenceRefusal: %d %d %v", tok, fence, ok)
	}
	if tok, fence, ok = redlock.FenceRefusal("FENCED 5 7"); !ok || tok != 5 || fence != 7 {
		t.Fatalf("FenceRefusal(FENCED 5 7): %d %d %v", tok, fence, ok)
	}
	for _, msg := range []string{"", "FENCED", "FENCED 5", "FENCED 0 7", "FENCED 5 7x", "ERR FENCED 5 7",
		"NOSCRIPT No matching script", "FENCED 5 18446744073709551616", "FENCED 5 7\x00"} {
		if _, _, ok := redlock.FenceRefusal(msg); ok {
			t.Errorf("FenceRefusal(%q) took it for a refusal", msg)
		}
	}
}

// FenceSQL hands back the C library's statement text for each placeholder
// style, and C's reason, as ErrInvalid, for what it refuses.
func TestFenceSQL(t *testing.T) {
	for _, c := range []struct {
		stmt redlock.FenceSQLStatement
		ph   redlock.SQLPlaceholder
		want string
	}{
		{redlock.FenceSQLUpdate, redlock.PlaceholderDollar,
			`UPDATE "s"."t%" SET "v" = $1, "f" = $2 WHERE "k" = $3 AND ("f" IS NULL OR "f" <= $2)`},
		{redlock.FenceSQLUpdate, redlock.PlaceholderQuestion,
			`UPDATE "s"."t%" SET "v" = ?, "f" = ? WHERE "k" = ? AND ("f" IS NULL OR "f" <= ?)`},
		{redlock.FenceSQLRead, redlock.PlaceholderFormat, `SELECT "f" FROM "s"."t%%" WHERE "k" = %s`},
		{redlock.FenceSQLUpsert, redlock.PlaceholderDollar, `INSERT INTO "s"."t%" ("k", "v", "f") VALUES ($1, $2, $3) ` +
			`ON CONFLICT ("k") DO UPDATE SET "v" = EXCLUDED."v", "f" = EXCLUDED."f" ` +
			`WHERE "s"."t%"."f" IS NULL OR "s"."t%"."f" <= EXCLUDED."f"`},
	} {
		got, err := redlock.FenceSQL(c.stmt, c.ph, "s.t%", []string{"k"}, []string{"v"}, "f", 1<<63-1)
		if err != nil || got != c.want {
			t.Errorf("FenceSQL(%d, %d):\n got  %s (%v)\n want %s", c.stmt, c.ph, got, err, c.want)
		}
	}
	if got, err := redlock.FenceSQL(redlock.FenceSQLRead, redlock.PlaceholderDollar, "t", []string{"id"}, nil, "", 1); err != nil ||
		got != `SELECT "fence" FROM "t" WHERE "id" = $1` {
		t.Errorf("the default fence column: %s (%v)", got, err)
	}
	_, err := redlock.FenceSQL(redlock.FenceSQLUpsert, redlock.PlaceholderDollar, "t", []string{"id"}, []string{"v"}, "", 1<<63)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "does not fit a BIGINT") {
		t.Errorf("token 2^63: want ErrInvalid with C's reason, got %v", err)
	}
	_, err = redlock.FenceSQL(redlock.FenceSQLUpdate, redlock.PlaceholderDollar, "t", []string{"id"}, []string{"fence"}, "", 1)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), `"fence" is the fence column`) {
		t.Errorf("the fence column among the values: want ErrInvalid naming it, got %v", err)
	}
}
