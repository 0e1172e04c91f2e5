/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fence_sql.c: redlock_fence_sql builds the exact statements of a fenced
 * SQL write for each placeholder style, quotes every name, and refuses what
 * cannot be fenced (bad names, clashes, tokens outside a BIGINT), naming why.
 * Needs no running node or database: the statements are only compared. */
#include "testutil.h"

static const char *K1[] = { "id" }, *K2[] = { "shop", "sku" }, *V2[] = { "qty", "note" };

/* Builds into a buffer of exactly the length asked for first, and compares. */
static void expect_sql(int stmt, int ph, const char *table, const char *const *k, size_t nk,
                       const char *const *v, size_t nv, const char *fence, uint64_t token, const char *want)
{
    char err[256] = "x";
    int n = redlock_fence_sql(NULL, 0, stmt, ph, table, k, nk, v, nv, fence, token, err, sizeof err);
    t_checks++;
    if (n < 0 || (size_t)n != strlen(want) || err[0]) {
        t_failures++;
        fprintf(stderr, "FAIL length: got %d (%s), want %zu for %s\n", n, err, strlen(want), want);
        return;
    }
    char *buf = malloc((size_t)n + 1);
    int m = redlock_fence_sql(buf, (size_t)n + 1, stmt, ph, table, k, nk, v, nv, fence, token, err, sizeof err);
    t_checks++;
    if (m != n || strcmp(buf, want)) {
        t_failures++;
        fprintf(stderr, "FAIL statement:\n got  %s\n want %s\n", buf, want);
    }
    free(buf);
}

static void expect_einval(int stmt, int ph, const char *table, const char *const *k, size_t nk,
                          const char *const *v, size_t nv, const char *fence, uint64_t token, const char *needle)
{
    char out[64] = "untouched", err[256] = "";
    int rc = redlock_fence_sql(out, sizeof out, stmt, ph, table, k, nk, v, nv, fence, token, err, sizeof err);
    t_checks++;
    if (rc != REDLOCK_EINVAL || !strstr(err, needle) || strcmp(out, "untouched")) {
        t_failures++;
        fprintf(stderr, "FAIL: got %s '%s' (out '%s'), want REDLOCK_EINVAL containing '%s'\n",
                redlock_error_name(rc), err, out, needle);
    }
}

static void test_upsert(void)
{
    expect_sql(REDLOCK_FENCE_SQL_UPSERT, REDLOCK_SQL_DOLLAR, "accounts", K1, 1, V2, 2, "fence", 5,
               "INSERT INTO \"accounts\" (\"id\", \"qty\", \"note\", \"fence\") VALUES ($1, $2, $3, $4) "
               "ON CONFLICT (\"id\") DO UPDATE SET \"qty\" = EXCLUDED.\"qty\", \"note\" = EXCLUDED.\"note\", "
               "\"fence\" = EXCLUDED.\"fence\" WHERE \"accounts\".\"fence\" IS NULL OR "
               "\"accounts\".\"fence\" <= EXCLUDED.\"fence\"");
    expect_sql(REDLOCK_FENCE_SQL_UPSERT, REDLOCK_SQL_FORMAT, "accounts", K2, 2, V2, 1, NULL, 1,
               "INSERT INTO \"accounts\" (\"shop\", \"sku\", \"qty\", \"fence\") VALUES (%s, %s, %s, %s) "
               "ON CONFLICT (\"shop\", \"sku\") DO UPDATE SET \"qty\" = EXCLUDED.\"qty\", "
               "\"fence\" = EXCLUDED.\"fence\" WHERE \"accounts\".\"fence\" IS NULL OR "
               "\"accounts\".\"fence\" <= EXCLUDED.\"fence\"");
    expect_sql(REDLOCK_FENCE_SQL_UPSERT, REDLOCK_SQL_QMARK, "jobs", K1, 1, V2, 1, "f", 1,
               "INSERT INTO \"jobs\" (\"id\", \"qty\", \"f\") VALUES (?, ?, ?) ON CONFLICT (\"id\") DO UPDATE "
               "SET \"qty\" = EXCLUDED.\"qty\", \"f\" = EXCLUDED.\"f\" WHERE \"jobs\".\"f\" IS NULL OR "
               "\"jobs\".\"f\" <= EXCLUDED.\"f\"");
}

static void test_update(void)
{
    /* $n: the token's number is written twice, passed once (V, T, K). */
    expect_sql(REDLOCK_FENCE_SQL_UPDATE, REDLOCK_SQL_DOLLAR, "t", K2, 2, V2, 2, "fence", 9,
               "UPDATE \"t\" SET \"qty\" = $1, \"note\" = $2, \"fence\" = $3 WHERE \"shop\" = $4 AND "
               "\"sku\" = $5 AND (\"fence\" IS NULL OR \"fence\" <= $3)");
    /* ? and %s: the token is passed twice (V, T, K, T). */
    expect_sql(REDLOCK_FENCE_SQL_UPDATE, REDLOCK_SQL_QMARK, "t", K1, 1, V2, 1, "fence", 9,
               "UPDATE \"t\" SET \"qty\" = ?, \"fence\" = ? WHERE \"id\" = ? AND "
               "(\"fence\" IS NULL OR \"fence\" <= ?)");
    expect_sql(REDLOCK_FENCE_SQL_UPDATE, REDLOCK_SQL_FORMAT, "t", K1, 1, V2, 1, "fence", 9,
               "UPDATE \"t\" SET \"qty\" = %s, \"fence\" = %s WHERE \"id\" = %s AND "
               "(\"fence\" IS NULL OR \"fence\" <= %s)");
    /* No values: only the fence is raised. */
    expect_sql(REDLOCK_FENCE_SQL_UPDATE, REDLOCK_SQL_DOLLAR, "t", K1, 1, NULL, 0, "fence", 9,
               "UPDATE \"t\" SET \"fence\" = $1 WHERE \"id\" = $2 AND (\"fence\" IS NULL OR \"fence\" <= $1)");
}

static void test_read(void)
{
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_DOLLAR, "t", K2, 2, V2, 2, "fence", 9,
               "SELECT \"fence\" FROM \"t\" WHERE \"shop\" = $1 AND \"sku\" = $2");
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_FORMAT, "t", K1, 1, NULL, 0, "fence", 9,
               "SELECT \"fence\" FROM \"t\" WHERE \"id\" = %s");
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_QMARK, "t", K1, 1, NULL, 0, "fence", 9,
               "SELECT \"fence\" FROM \"t\" WHERE \"id\" = ?");
}

static void test_quoting(void)
{
    /* A '"' doubled, a dot splits a name into parts, a space is kept. */
    const char *k[] = { "the key" }, *v[] = { "the \"qty\"" };
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_DOLLAR, "my schema.we\"ird", k, 1, v, 1, "my fence", 1,
               "SELECT \"my fence\" FROM \"my schema\".\"we\"\"ird\" WHERE \"the key\" = $1");
    expect_sql(REDLOCK_FENCE_SQL_UPDATE, REDLOCK_SQL_DOLLAR, "odd\"table", k, 1, v, 1, "f", 1,
               "UPDATE \"odd\"\"table\" SET \"the \"\"qty\"\"\" = $1, \"f\" = $2 WHERE \"the key\" = $3 AND "
               "(\"f\" IS NULL OR \"f\" <= $2)");
    /* A '%' is doubled for format-style drivers only; a '?' or '$' inside quotes is a name's. */
    const char *pk[] = { "50%" };
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_FORMAT, "a%b", pk, 1, NULL, 0, "fence", 1,
               "SELECT \"fence\" FROM \"a%%b\" WHERE \"50%%\" = %s");
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_QMARK, "a%b", pk, 1, NULL, 0, "fence", 1,
               "SELECT \"fence\" FROM \"a%b\" WHERE \"50%\" = ?");
    /* A name that is all quotes stays one identifier. */
    const char *q[] = { "\"" };
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_QMARK, "t", q, 1, NULL, 0, "fence", 1,
               "SELECT \"fence\" FROM \"t\" WHERE \"\"\"\" = ?");
}

/* A call that must fail: REDLOCK_EINVAL, its reason, and out untouched. */
struct refusal {
    int stmt, ph;
    const char *table;
    const char *const *k;
    size_t nk;
    const char *const *v;
    size_t nv;
    const char *fence;
    uint64_t token;
    const char *needle;
};

static void expect_refusals(const struct refusal *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_einval(r[i].stmt, r[i].ph, r[i].table, r[i].k, r[i].nk, r[i].v, r[i].nv, r[i].fence, r[i].token,
                      r[i].needle);
}

enum { UPSERT = REDLOCK_FENCE_SQL_UPSERT, UPDATE = REDLOCK_FENCE_SQL_UPDATE, READ = REDLOCK_FENCE_SQL_READ,
       DOLLAR = REDLOCK_SQL_DOLLAR, QMARK = REDLOCK_SQL_QMARK };

static void test_tokens(void)
{
    /* 2^63 - 1 is the last token a BIGINT holds; 0 is never a token. */
    expect_sql(REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_QMARK, "t", K1, 1, NULL, 0, "fence", (uint64_t)INT64_MAX,
               "SELECT \"fence\" FROM \"t\" WHERE \"id\" = ?");
    const struct refusal r[] = {
        { UPSERT, DOLLAR, "t", K1, 1, V2, 1, "fence", 0, "at least 1, got 0" },
        { UPSERT, DOLLAR, "t", K1, 1, V2, 1, "fence", (uint64_t)INT64_MAX + 1,
          "token 9223372036854775808 does not fit a BIGINT" },
        { UPDATE, QMARK, "t", K1, 1, V2, 1, "fence", UINT64_MAX, "does not fit a BIGINT" },
    };
    expect_refusals(r, sizeof r / sizeof r[0]);
}

static void test_refusals(void)
{
    static const char *empty[] = { "" }, *dots[] = { "a..b" }, *nul[] = { NULL };
    /* Clashes: a key column among the values, the fence among either, a column twice in one list. */
    static const char *kv[] = { "id" }, *fv[] = { "qty", "fence" }, *twice[] = { "a", "a" };
    const struct refusal r[] = {
        { UPSERT, DOLLAR, "", K1, 1, V2, 1, "fence", 1, "table name is empty" },
        { UPSERT, DOLLAR, NULL, K1, 1, V2, 1, "fence", 1, "table name is NULL" },
        { UPSERT, DOLLAR, "s.", K1, 1, V2, 1, "fence", 1, "empty part" },
        { UPSERT, DOLLAR, ".t", K1, 1, V2, 1, "fence", 1, "empty part" },
        { UPSERT, DOLLAR, "t", K1, 1, V2, 1, "", 1, "fence column name is empty" },
        { UPSERT, DOLLAR, "t", empty, 1, V2, 1, "fence", 1, "key column 1 is empty" },
        { UPSERT, DOLLAR, "t", K1, 1, dots, 1, "fence", 1, "value column 1 has an empty part" },
        { UPSERT, DOLLAR, "t", K1, 1, nul, 1, "fence", 1, "value column 1 is NULL" },
        { UPSERT, DOLLAR, "t", NULL, 1, V2, 1, "fence", 1, "the array is NULL" },
        { UPSERT, DOLLAR, "t", K1, 0, V2, 1, "fence", 1, "key must name" },
        { UPSERT, DOLLAR, "t", K1, 1, NULL, 0, "fence", 1, "values must name" },
        { 0, DOLLAR, "t", K1, 1, V2, 1, "fence", 1, "unknown statement 0" },
        { READ, 4, "t", K1, 1, V2, 1, "fence", 1, "unknown placeholder style 4" },
        { UPSERT, DOLLAR, "t", K1, 1, kv, 1, "fence", 1, "column \"id\" is named twice" },
        { UPDATE, DOLLAR, "t", K1, 1, fv, 2, "fence", 1, "column \"fence\" is the fence column" },
        { UPDATE, DOLLAR, "t", K1, 1, NULL, 0, "id", 1, "column \"id\" is the fence column" },
        { READ, DOLLAR, "t", twice, 2, NULL, 0, "fence", 1, "column \"a\" is named twice" },
        /* The default fence column is "fence", and a clash with it is seen too. */
        { UPDATE, DOLLAR, "t", K1, 1, fv, 2, NULL, 1, "is the fence column" },
    };
    expect_refusals(r, sizeof r / sizeof r[0]);

    char longname[REDLOCK_FENCE_SQL_MAX_NAME + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    expect_einval(READ, DOLLAR, longname, K1, 1, NULL, 0, "fence", 1, "longer than");
    longname[REDLOCK_FENCE_SQL_MAX_NAME] = '\0';   /* at the limit: taken */
    char err[64];
    CHECK(redlock_fence_sql(NULL, 0, READ, DOLLAR, longname, K1, 1, NULL, 0, NULL, 1, err, sizeof err) >
          REDLOCK_FENCE_SQL_MAX_NAME);

    static const char *many[REDLOCK_FENCE_SQL_MAX_COLUMNS + 1];
    for (size_t i = 0; i < REDLOCK_FENCE_SQL_MAX_COLUMNS + 1; i++)
        many[i] = "c";
    expect_einval(UPSERT, DOLLAR, "t", K1, 1, many, REDLOCK_FENCE_SQL_MAX_COLUMNS, "fence", 1,
                  "more than REDLOCK_FENCE_SQL_MAX_COLUMNS");

    /* out NULL with a size; errbuf NULL is allowed. */
    CHECK_RC(redlock_fence_sql(NULL, 8, READ, DOLLAR, "t", K1, 1, NULL, 0, NULL, 1, NULL, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_fence_sql(NULL, 0, READ, DOLLAR, "", K1, 1, NULL, 0, NULL, 1, NULL, 0), REDLOCK_EINVAL);
}

static void test_truncation(void)
{
    /* As snprintf: what fits, NUL-terminated, and the whole length returned. */
    const char *want = "SELECT \"fence\" FROM \"t\" WHERE \"id\" = $1";
    char small[10];
    int n = redlock_fence_sql(small, sizeof small, REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_DOLLAR, "t", K1, 1, NULL, 0,
                              NULL, 1, NULL, 0);
    CHECK(n == (int)strlen(want));
    CHECK(strcmp(small, "SELECT \"f") == 0);
    char one[1] = { 'x' };
    CHECK(redlock_fence_sql(one, 1, REDLOCK_FENCE_SQL_READ, REDLOCK_SQL_DOLLAR, "t", K1, 1, NULL, 0, NULL, 1, NULL, 0)
          == (int)strlen(want));
    CHECK(one[0] == '\0');
}

int main(void)
{
    run_test("upsert", test_upsert);
    run_test("update", test_update);
    run_test("read", test_read);
    run_test("quoting", test_quoting);
    run_test("tokens", test_tokens);
    run_test("refusals", test_refusals);
    run_test("truncation", test_truncation);
    return finish_tests();
}
