# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): redlock.fenced_upsert and
# fenced_update on a real PostgreSQL server started on loopback by tests/harness/pgserver.py
# (and SQLite, whose ON CONFLICT is the same), through psycopg 3. The edge cases: the first write,
# a row whose fence is NULL, equal and older tokens, the row missing, tokens compared as integers.
from __future__ import annotations

import sqlite3

import psycopg
import pytest

import pgserver
import redlock
from redlock import FencedOut, fenced_update, fenced_upsert


@pytest.fixture(scope="module")
def pg():
    with pgserver.PostgresServer() as server:
        yield server


@pytest.fixture
def db(pg):
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute('CREATE TABLE IF NOT EXISTS accounts (id BIGINT PRIMARY KEY, balance BIGINT, note TEXT, '
                     'fence BIGINT)')
        conn.execute("TRUNCATE accounts")
        yield conn


def row(db, i):
    return db.execute("SELECT balance, note, fence FROM accounts WHERE id = %s", (i,)).fetchone()


def test_upsert_first_write_equal_and_older_tokens(db):
    cur = db.cursor()
    fenced_upsert(cur, "accounts", {"id": 1}, {"balance": 10, "note": "a"}, 5)   # no row yet
    assert row(db, 1) == (10, "a", 5)
    fenced_upsert(cur, "accounts", {"id": 1}, {"balance": 11, "note": "b"}, 5)   # the same holder
    assert row(db, 1) == (11, "b", 5)
    fenced_upsert(cur, "accounts", {"id": 1}, {"balance": 12, "note": "c"}, 9)
    with pytest.raises(FencedOut) as info:
        fenced_upsert(cur, "accounts", {"id": 1}, {"balance": 0, "note": "late"}, 8)
    assert (info.value.token, info.value.fence) == (8, 9) and "8" in str(info.value) and "9" in str(info.value)
    assert row(db, 1) == (12, "c", 9)                  # nothing written


def test_integers_not_strings_and_the_bigint_limit(db):
    cur = db.cursor()
    fenced_upsert(cur, "accounts", {"id": 2}, {"balance": 1}, 10)
    with pytest.raises(FencedOut):
        fenced_upsert(cur, "accounts", {"id": 2}, {"balance": 2}, 9)     # "9" > "10" as strings
    big = 2**62
    fenced_upsert(cur, "accounts", {"id": 3}, {"balance": 1}, big + 1)
    with pytest.raises(FencedOut):
        fenced_upsert(cur, "accounts", {"id": 3}, {"balance": 2}, big)
    fenced_upsert(cur, "accounts", {"id": 3}, {"balance": 3}, 2**63 - 1)
    assert row(db, 3) == (3, None, 2**63 - 1)
    with pytest.raises(redlock.InvalidArgument, match="BIGINT"):
        fenced_upsert(cur, "accounts", {"id": 3}, {"balance": 4}, 2**63)


def test_update_null_fence_missing_row_and_older_token(db):
    db.execute("INSERT INTO accounts (id, balance) VALUES (4, 100)")   # written before fencing
    cur = db.cursor()
    fenced_update(cur, "accounts", {"id": 4}, {"balance": 90}, 3)       # NULL fence: the first write
    assert row(db, 4) == (90, None, 3)
    fenced_update(cur, "accounts", {"id": 4}, {"balance": 80}, 3)
    with pytest.raises(FencedOut) as info:
        fenced_update(cur, "accounts", {"id": 4}, {"balance": 0}, 2)
    assert (info.value.token, info.value.fence) == (2, 3)
    assert row(db, 4) == (80, None, 3)
    with pytest.raises(LookupError, match="no such row"):
        fenced_update(cur, "accounts", {"id": 5}, {"balance": 1}, 7)
    assert row(db, 5) is None


def test_bad_arguments_and_quoted_names(db):
    cur = db.cursor()
    for args in (({"id": 6}, {}, 1), ({}, {"balance": 1}, 1), ({"id": 6}, {"id": 7}, 1),
                 ({"id": 6}, {"fence": 1}, 1), ({"id": 6}, {"balance": 1}, 0)):
        with pytest.raises(redlock.InvalidArgument):
            fenced_upsert(cur, "accounts", *args)
    with pytest.raises(TypeError):
        fenced_upsert(cur, "accounts", {"id": 6}, {"balance": 1}, "5")
    db.execute('CREATE TABLE IF NOT EXISTS "odd""table" ("the key" TEXT PRIMARY KEY, "v" TEXT, "my fence" BIGINT)')
    fenced_upsert(cur, 'odd"table', {"the key": "k"}, {"v": "x"}, 2, fence_column="my fence")
    with pytest.raises(FencedOut):
        fenced_upsert(cur, 'odd"table', {"the key": "k"}, {"v": "y"}, 1, fence_column="my fence")
    assert db.execute('SELECT "v", "my fence" FROM "odd""table"').fetchone() == ("x", 2)
    # The C builder doubles a '%' for psycopg's "%s" style: a name with one is a name, not a placeholder.
    db.execute('CREATE TABLE IF NOT EXISTS "pct%" ("id" BIGINT PRIMARY KEY, "50%" TEXT, fence BIGINT)')
    fenced_upsert(cur, "pct%", {"id": 1}, {"50%": "half"}, 3)
    fenced_update(cur, "pct%", {"id": 1}, {"50%": "more"}, 3)
    with pytest.raises(FencedOut):
        fenced_update(cur, "pct%", {"id": 1}, {"50%": "late"}, 2)
    assert db.execute('SELECT "50%", fence FROM "pct%"').fetchone() == ("more", 3)
    # What C refuses, with its reason: an empty part of a dotted name, a column given twice.
    with pytest.raises(redlock.InvalidArgument, match="empty part"):
        fenced_update(cur, "public..accounts", {"id": 6}, {"balance": 1}, 1)
    with pytest.raises(redlock.InvalidArgument, match='"id" is named twice'):
        fenced_update(cur, "accounts", {"id": 6}, {"id": 1}, 1)
    with pytest.raises(redlock.InvalidArgument, match="placeholder"):
        fenced_update(cur, "accounts", {"id": 6}, {"balance": 1}, 1, placeholder=":1")


def test_sqlite_with_its_placeholder():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT, fence INTEGER)")
    cur = conn.cursor()
    fenced_upsert(cur, "jobs", {"id": 1}, {"state": "running"}, 4, placeholder="?")
    fenced_update(cur, "jobs", {"id": 1}, {"state": "done"}, 4, placeholder="?")
    with pytest.raises(FencedOut):
        fenced_update(cur, "jobs", {"id": 1}, {"state": "late"}, 3, placeholder="?")
    assert conn.execute("SELECT state, fence FROM jobs").fetchone() == ("done", 4)
    conn.close()


def test_with_a_lock_token(cluster5, db, name):
    with redlock.Redlock(cluster5.urls, fencing=True) as c:
        first = c.lock(name, ttl=5.0)
        assert first.acquire(blocking=False)
        old = first.token
        first.release()
        with c.lock(name, ttl=5.0) as lock:
            fenced_upsert(db.cursor(), "accounts", {"id": 8}, {"note": "new holder"}, lock.token)
        with pytest.raises(FencedOut):
            fenced_upsert(db.cursor(), "accounts", {"id": 8}, {"note": "old holder"}, old)
    assert row(db, 8)[1] == "new holder"
