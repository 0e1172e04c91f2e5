/* SPDX-License-Identifier: BSD-3-Clause */
/* fence_sql.c: the statements of a fenced write to an SQL row (docs/fencing.md,
 * "SQL rows"), built here once for every binding: the quoting of names, the
 * fence comparison, the placeholders and the checks (names, clashes, the
 * token's range), so that no binding writes its own. Values never come here:
 * the statements carry placeholders, and the caller passes the values as
 * parameters in the order redlock.h documents. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Writes into out as snprintf does: what fits (always NUL-terminated when
 * size > 0), while len counts the whole statement. */
typedef struct {
    char *out;
    size_t size, len;
    int ph;        /* redlock_sql_placeholder */
    unsigned next; /* the last $n written */
} sqlbuf;

static void put(sqlbuf *b, const char *s, size_t n)
{
    if (b->len + 1 < b->size) {
        size_t room = b->size - 1 - b->len;
        memcpy(b->out + b->len, s, n < room ? n : room);
    }
    b->len += n;
    if (b->size)
        b->out[b->len < b->size ? b->len : b->size - 1] = '\0';
}

static void puts_(sqlbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* One quoted identifier, "schema.table" as "schema"."table": a '"' inside
 * is doubled, and, for format-style drivers, which read every '%' of the
 * statement, so is a '%'. */
static void ident(sqlbuf *b, const char *name)
{
    put(b, "\"", 1);
    for (const char *p = name; *p; p++) {
        if (*p == '.')
            put(b, "\".\"", 3);
        else if (*p == '"')
            put(b, "\"\"", 2);
        else if (*p == '%' && b->ph == REDLOCK_SQL_FORMAT)
            put(b, "%%", 2);
        else
            put(b, p, 1);
    }
    put(b, "\"", 1);
}

/* The next placeholder; a numbered one is the next number. */
static unsigned mark(sqlbuf *b)
{
    char num[16];
    switch (b->ph) {
    case REDLOCK_SQL_DOLLAR:
        snprintf(num, sizeof num, "$%u", ++b->next);
        puts_(b, num);
        return b->next;
    case REDLOCK_SQL_FORMAT:
        puts_(b, "%s");
        return 0;
    default:
        puts_(b, "?");
        return 0;
    }
}

/* The token's placeholder again (UPDATE's WHERE): $n is written once more;
 * the others cannot be repeated, so the caller passes the token twice. */
static void mark_again(sqlbuf *b, unsigned n)
{
    char num[16];
    if (b->ph == REDLOCK_SQL_DOLLAR) {
        snprintf(num, sizeof num, "$%u", n);
        puts_(b, num);
    } else {
        mark(b);
    }
}

/* Writes fmt, where %I is the next argument as an identifier and %s as it
 * is; everything else is copied. */
static void tpl(sqlbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && (p[1] == 'I' || p[1] == 's')) {
            const char *arg = va_arg(ap, const char *);
            if (*++p == 'I')
                ident(b, arg);
            else
                puts_(b, arg);
        } else {
            put(b, p, 1);
        }
    }
    va_end(ap);
}

static void cols(sqlbuf *b, const char *const *names, size_t n, const char *sep, const char *after, int marks)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            puts_(b, sep);
        ident(b, names[i]);
        puts_(b, after);
        if (marks)
            mark(b);
    }
}

static int fail(char *errbuf, size_t errsize, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *errbuf, size_t errsize, const char *fmt, ...)
{
    if (errbuf && errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errsize, fmt, ap);
        va_end(ap);
    }
    return REDLOCK_EINVAL;
}

/* Why name cannot be an identifier, or NULL. */
static const char *name_problem(const char *name)
{
    if (!name)
        return "is NULL";
    if (!*name)
        return "is empty";
    if (strlen(name) > REDLOCK_FENCE_SQL_MAX_NAME)
        return "is longer than REDLOCK_FENCE_SQL_MAX_NAME bytes";
    if (name[0] == '.' || name[strlen(name) - 1] == '.' || strstr(name, ".."))
        return "has an empty part between dots";
    return NULL;
}

static int check_names(const char *what, const char *const *names, size_t n, char *errbuf, size_t errsize)
{
    if (n && !names)
        return fail(errbuf, errsize, "%s columns: the array is NULL", what);
    for (size_t i = 0; i < n; i++) {
        const char *why = name_problem(names[i]);
        if (why)
            return fail(errbuf, errsize, "%s column %zu %s", what, i + 1, why);
    }
    return 0;
}

/* A column named twice among key, values and the fence would be written or
 * compared twice in one statement: refused, naming it. */
static int check_clash(const char *const *key, size_t nk, const char *const *values, size_t nv, const char *fence,
                       char *errbuf, size_t errsize)
{
    size_t n = nk + nv;
    for (size_t i = 0; i < n; i++) {
        const char *a = i < nk ? key[i] : values[i - nk];
        if (!strcmp(a, fence))
            return fail(errbuf, errsize, "column \"%.200s\" is the fence column; it is named twice "
                        "(key, values, fence)", a);
        for (size_t j = i + 1; j < n; j++)
            if (!strcmp(a, j < nk ? key[j] : values[j - nk]))
                return fail(errbuf, errsize, "column \"%.200s\" is named twice (key, values, fence)", a);
    }
    return 0;
}

int redlock_fence_sql(char *out, size_t size, int statement, int placeholder, const char *table,
                      const char *const *key_columns, size_t n_key, const char *const *value_columns,
                      size_t n_values, const char *fence_column, uint64_t token, char *errbuf, size_t errbuf_size)
{
    const char *why;
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out && size)
        return fail(errbuf, errbuf_size, "out is NULL with a size of %zu", size);
    if (statement < REDLOCK_FENCE_SQL_UPSERT || statement > REDLOCK_FENCE_SQL_READ)
        return fail(errbuf, errbuf_size, "unknown statement %d (REDLOCK_FENCE_SQL_UPSERT, _UPDATE or _READ)",
                    statement);
    if (placeholder < REDLOCK_SQL_DOLLAR || placeholder > REDLOCK_SQL_QMARK)
        return fail(errbuf, errbuf_size, "unknown placeholder style %d (REDLOCK_SQL_DOLLAR, _FORMAT or _QMARK)",
                    placeholder);
    if (token == 0)
        return fail(errbuf, errbuf_size, "token must be at least 1, got 0 (a lock without fencing, or not held?)");
    if (token > (uint64_t)INT64_MAX)
        return fail(errbuf, errbuf_size, "token %" PRIu64 " does not fit a BIGINT fence column (at most 2^63-1)",
                    token);
    if ((why = name_problem(table)))
        return fail(errbuf, errbuf_size, "table name %s", why);
    if (!fence_column)
        fence_column = "fence";
    if ((why = name_problem(fence_column)))
        return fail(errbuf, errbuf_size, "fence column name %s", why);
    if (n_key == 0)
        return fail(errbuf, errbuf_size, "key must name at least one column");
    if (n_values == 0 && statement == REDLOCK_FENCE_SQL_UPSERT)
        return fail(errbuf, errbuf_size, "values must name at least one column (an upsert writes a row)");
    if (n_key > REDLOCK_FENCE_SQL_MAX_COLUMNS || n_values > REDLOCK_FENCE_SQL_MAX_COLUMNS - n_key)
        return fail(errbuf, errbuf_size, "%zu key and %zu value columns: more than REDLOCK_FENCE_SQL_MAX_COLUMNS "
                    "(%d) together", n_key, n_values, REDLOCK_FENCE_SQL_MAX_COLUMNS);
    int rc;
    if ((rc = check_names("key", key_columns, n_key, errbuf, errbuf_size)) ||
        (rc = check_names("value", value_columns, n_values, errbuf, errbuf_size)) ||
        (rc = check_clash(key_columns, n_key, value_columns, n_values, fence_column, errbuf, errbuf_size)))
        return rc;

    sqlbuf b = { out, size, 0, placeholder, 0 };
    if (size)
        out[0] = '\0';
    if (statement == REDLOCK_FENCE_SQL_UPSERT) {
        /* INSERT INTO t (k, v, fence) VALUES (.., .., ..) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v,
         * fence = EXCLUDED.fence WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence */
        tpl(&b, "INSERT INTO %I (", table);
        cols(&b, key_columns, n_key, ", ", "", 0);
        for (size_t i = 0; i < n_values; i++)
            tpl(&b, ", %I", value_columns[i]);
        tpl(&b, ", %I) VALUES (", fence_column);
        for (size_t i = 0; i < n_key + n_values + 1; i++) {
            if (i)
                puts_(&b, ", ");
            mark(&b);
        }
        puts_(&b, ") ON CONFLICT (");
        cols(&b, key_columns, n_key, ", ", "", 0);
        puts_(&b, ") DO UPDATE SET ");
        for (size_t i = 0; i < n_values + 1; i++) {
            const char *c = i < n_values ? value_columns[i] : fence_column;
            tpl(&b, "%s%I = EXCLUDED.%I", i ? ", " : "", c, c);
        }
        tpl(&b, " WHERE %I.%I IS NULL OR %I.%I <= EXCLUDED.%I", table, fence_column, table, fence_column,
            fence_column);
    } else if (statement == REDLOCK_FENCE_SQL_UPDATE) {
        /* UPDATE t SET v = .., fence = $T WHERE k = .. AND (fence IS NULL OR fence <= $T) */
        tpl(&b, "UPDATE %I SET ", table);
        cols(&b, value_columns, n_values, ", ", " = ", 1);
        tpl(&b, "%s%I = ", n_values ? ", " : "", fence_column);
        unsigned tok = mark(&b);
        puts_(&b, " WHERE ");
        cols(&b, key_columns, n_key, " AND ", " = ", 1);
        tpl(&b, " AND (%I IS NULL OR %I <= ", fence_column, fence_column);
        mark_again(&b, tok);
        puts_(&b, ")");
    } else {
        /* SELECT fence FROM t WHERE k = ..: after a write that changed no row, the fence that
         * refused it, or no row at all. */
        tpl(&b, "SELECT %I FROM %I WHERE ", fence_column, table);
        cols(&b, key_columns, n_key, " AND ", " = ", 1);
    }
    return (int)b.len;
}
