/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.i: the one SWIG interface over c/include/redlock.h: the classes
 * Redlock, Lock, Options and LockOptions that every SWIG language gets. What
 * a language adds (how it raises errors, its sequences and strings,
 * callbacks) is in its own file: java/redlock_java.i, tcl/redlock_tcl.i,
 * ruby/redlock_ruby.i. */

/* Java: package-private RedlockModule and RedlockModuleJNI classes, names that
 * cannot clash with Redlock on a case-insensitive file system (and that CMake's
 * UseSWIG expects). C#: the same, RedlockModule and RedlockModulePINVOKE.
 * Other languages: the module "redlock". */
#if defined(SWIGJAVA) || defined(SWIGCSHARP)
%module RedlockModule
#else
%module redlock
#endif

%{
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define REDLOCK_EXPERIMENTAL   /* the wrappers use redlock_lock_acquire_many */
#include "redlock.h"
#include "redlock_swig.h"

/* Replaces an owned string field of the options with a copy of value (NULL unsets). */
static void rl_set_owned(rl_status *st, const char **field, const char *value) {
    char *copy = NULL;
    if (value && !(copy = rl_strdup(value))) {
        rl_fail(st, REDLOCK_ENOMEM, NULL);
        return;
    }
    free((char *)*field);
    *field = copy;
}

/* Elections: a leader read as one line, "present term revision value". */
static char *rl_leader_line(const redlock_leader *w) {
    char *buf = malloc(64 + w->value_len + 1);
    if (buf)
        snprintf(buf, 64 + w->value_len + 1, "%d %llu %llu %s", w->present, (unsigned long long)w->term,
                 (unsigned long long)w->revision, w->value);
    return buf;
}

static int rl_parse_leader_line(const char *line, redlock_leader *w) {
    unsigned long long term = 0, rev = 0;
    int present = 0, used = 0;
    memset(w, 0, sizeof *w);
    w->version = REDLOCK_LEADER_VERSION;
    if (!line || !*line)
        return 0;
    if (sscanf(line, "%d %llu %llu %n", &present, &term, &rev, &used) < 3)
        return -1;
    w->present = present;
    w->term = term;
    w->revision = rev;
    return 0;
}

/* Sets or clears one REDLOCK_OPT_* bit. */
static void rl_flag_set(uint32_t *flags, uint32_t bit, bool on) {
    if (on)
        *flags |= bit;
    else
        *flags &= ~bit;
}

%}

%include <stdint.i>

/* ---------------------------------------------------------------------------
 * Raising errors. Every wrapped call that can fail takes a hidden rl_status
 * (numinputs=0, so it is not part of any language's signature); after the
 * call, a non-zero code becomes the language's error: the argout typemap of
 * each language's file.
 * ------------------------------------------------------------------------- */
%typemap(in, numinputs=0, noblock=1) rl_status *st (rl_status tmp) {
  tmp.code = 0;
  tmp.detail = NULL;
  $1 = &tmp;
}
%typemap(freearg, noblock=1) rl_status *st { free($1->detail); }

/* Buffers handed out by %newobject functions are malloc'd. */
%typemap(newfree) char * "free($1);"

/* ---------------------------------------------------------------------------
 * What the target languages see from redlock.h: the options structs (fields
 * in lowerCamelCase) and the constants. The free functions are reached
 * through the classes below.
 * ------------------------------------------------------------------------- */
%rename("$ignore", %$isfunction, %$not %$ismember) "";
%rename("%(lowercamelcase)s", %$ismember, %$isvariable) "";
%ignore REDLOCK_EXTERN;
%ignore redlock_options::version;
%ignore redlock_lock_options::version; /* set by the constructor and by Lock.getOptions */
%ignore redlock_lock_options::flags;   /* the booleans wake and fair below */
%ignore redlock_options::key_prefix; /* owned copy below */
%ignore redlock_options::tls_ca_file;  /* owned copies below, like key_prefix */
%ignore redlock_options::tls_ca_dir;
%ignore redlock_options::tls_cert_file;
%ignore redlock_options::tls_key_file;
%ignore redlock_options::tls_server_name;
%ignore redlock_options::tls_insecure_skip_verify; /* a boolean below */
/* The metrics hook is a callback: Java sets it with Options.setEventListener;
 * other languages do not have it yet. */
%ignore redlock_options::on_event;
%ignore redlock_options::on_event_userdata;
%ignore redlock_options::on_event_userdata_free;
%ignore redlock_event;
%ignore redlock_leader;   /* elections: read through Election's methods below */

%rename(Redlock) redlock_client;
%rename(Lock) redlock_lock;
%rename(Options) redlock_options;
%rename(LockOptions) redlock_lock_options;
%rename(Election) redlock_election;
/* Generated helper functions are named struct_method (redlock_lock_acquire
 * would clash with the C API), so methods are declared with an rl_ prefix
 * that the target languages never see. */
%rename("%(strip:[rl_])s", %$ismember, %$isfunction) "";
%nodefaultctor redlock_client;
%nodefaultctor redlock_lock;
%nodefaultctor redlock_options;
%nodefaultctor redlock_lock_options;
%nodefaultctor redlock_election;

/* ---------------------------------------------------------------------------
 * The language's own file. It may rename and ignore what is declared below
 * (a later %rename wins), and may replace the callback hooks:
 *   rl_open          redlock_client_open, plus the client's event hook
 *   rl_options_free  drops the event listener of an Options
 * (A lock's lost listener needs no hook: the C library lets go of it,
 * through redlock_lock_auto_extend's userdata_free.)
 * ------------------------------------------------------------------------- */
#if defined(SWIGJAVA)
%include "java/redlock_java.i"
#elif defined(SWIGTCL)
%include "tcl/redlock_tcl.i"
#elif defined(SWIGRUBY)
%include "ruby/redlock_ruby.i"
#elif defined(SWIGCSHARP)
%include "csharp/redlock_csharp.i"
#else
/* Any other SWIG language: the portable exception.i mapping (a RuntimeError
 * whose text starts with the error name). Give it a file of its own, as Tcl
 * has, to raise that language's own exception classes. */
%include <exception.i>
%{
static const char *rl_message(int code, const char *detail, char *buf, size_t size) {
    snprintf(buf, size, "%s: %s", redlock_error_name(code),
             detail && *detail ? detail : redlock_strerror(code));
    return buf;
}
%}
%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0) {
    char rl_buf[1024];
    rl_message($1->code, $1->detail, rl_buf, sizeof rl_buf);
    free($1->detail); /* freed here: not every language runs freearg on failure */
    $1->detail = NULL;
    SWIG_exception_fail(SWIG_RuntimeError, rl_buf);
  }
}
#endif

%{
#ifndef rl_open
/* No callbacks: the hooks are the C calls themselves. */
#define rl_open redlock_client_open
#define rl_options_free(o) ((void)(o))
#endif
%}

%include "redlock.h"

/* SWIG needs a struct body to hang methods on; the C compiler never sees
 * these empty bodies (the handles stay opaque). */
struct redlock_client {};
struct redlock_lock {};
struct redlock_election {};

/* ---------------------------------------------------------------------------
 * Fenced writes to a store (docs/fencing.md, "Protecting your store"): each
 * language's Fence runs the C library's script on the caller's own client, so
 * the comparison, the key's name and the reading of a refusal are C's, not
 * retyped per language. Static: Redlock.fenceScript() and so on (Java renames
 * them to package-private ...Native methods).
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_fenceKey;
%extend redlock_client {
  static const char *rl_fenceScript() {
    return redlock_fence_script();
  }

  static const char *rl_fenceScriptSha1() {
    return redlock_fence_script_sha1();
  }

  /* redlock_fence_key, malloc'd; EINVAL for a resource that cannot name a fence. */
  static char *rl_fenceKey(rl_status *st, const char *resource) {
    int n = redlock_fence_key(NULL, 0, resource);
    char *key = n < 0 ? NULL : malloc((size_t)n + 1);
    if (n < 0)
      rl_fail(st, REDLOCK_EINVAL, "the resource cannot name a fence: empty, too long, or a '}' without a hash tag");
    else if (!key)
      rl_fail(st, REDLOCK_ENOMEM, NULL);
    else
      redlock_fence_key(key, (size_t)n + 1, resource);
    return key;
  }

  /* redlock_fence_refusal of a store's error message: its token (which 0)
   * or its fence (which 1), the unsigned 64 bits in a signed integer (Java's
   * long; Ruby and C# read it modulo 2^64); 0 when msg is not a refusal (a
   * token is never 0). */
  static int64_t rl_fenceRefusal(const char *msg, int which) {
    uint64_t t[2];
    if (!msg || !redlock_fence_refusal(msg, strlen(msg), &t[0], &t[1]))
      return 0;
    return (int64_t)t[which ? 1 : 0];
  }
}

/* redlock_fence_sql, malloc'd: the statement of a fenced SQL write, its
 * reason raised as REDLOCK_EINVAL. The token's bits as a signed integer
 * (Java's long): one above 2^63 - 1 reads negative here and C refuses it.
 * The column lists cross as the node list does (each language's file
 * applies its typemap, or ignores this). */
%newobject redlock_client::rl_fenceSql;
%extend redlock_client {
  static char *rl_fenceSql(rl_status *st, int statement, int placeholder, const char *table,
                           const char *const *key_columns, size_t n_key, const char *const *value_columns,
                           size_t n_values, const char *fence_column, int64_t token) {
    char err[512] = "";
    char *sql = NULL;
    int n = redlock_fence_sql(NULL, 0, statement, placeholder, table, key_columns, n_key, value_columns,
                              n_values, fence_column, (uint64_t)token, err, sizeof err);
    if (n < 0)
      rl_fail(st, n, err);
    else if (!(sql = malloc((size_t)n + 1)))
      rl_fail(st, REDLOCK_ENOMEM, NULL);
    else
      redlock_fence_sql(sql, (size_t)n + 1, statement, placeholder, table, key_columns, n_key, value_columns,
                        n_values, fence_column, (uint64_t)token, NULL, 0);
    return sql;
  }
}

/* ---------------------------------------------------------------------------
 * The classes. Each method is one C call; retries, quorum and validity are
 * all decided in libredlock.
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_newLock;
%newobject redlock_client::rl_acquire;
%newobject redlock_client::rl_tryAcquire;
%newobject redlock_client::rl_listenerMessage;
%newobject redlock_lock::rl_getOptions;
%newobject redlock_lock::rl_nodeMessage;
/* close() frees the object: the proxy no longer owns it. */
%delobject redlock_lock::rl_close;

%extend redlock_client {
  /* Fails with the detail from errbuf, e.g. "node 2 'redis://x:abc': port is not a number". */
  redlock_client(rl_status *st, const char *const *nodes, size_t n_nodes,
                 const redlock_options *options) {
    redlock_client *c = NULL;
    char err[1024] = "";
    int rc = rl_open(&c, nodes, n_nodes, options, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
    return c;
  }

  ~redlock_client() {
    redlock_client_free($self); /* its locks keep the C client, and its event hook, alive */
  }

  redlock_lock *rl_newLock(rl_status *st, const char *resource) {
    redlock_lock *l = NULL;
    char err[512] = "";
    int rc = redlock_lock_open(&l, $self, resource, err, sizeof err);
    if (rc != 0) {
      rl_fail(st, rc, err);
      return NULL;
    }
    return l;
  }

  /* newLock and Lock.acquire in one call (Java composes them itself, so
   * that close() never waits for a slow acquire). */
  redlock_lock *rl_acquire(rl_status *st, const char *resource, uint32_t ttlMs, int64_t waitMs) {
    redlock_lock *l = redlock_client_rl_newLock($self, st, resource);
    int rc;
    if (!l)
      return NULL;
    rc = redlock_lock_acquire(l, ttlMs, waitMs);
    if (rc != 0) {
      rl_lock_fail(st, l, rc);
      redlock_lock_free(l);
      return NULL;
    }
    return l;
  }

  redlock_lock *rl_tryAcquire(rl_status *st, const char *resource, uint32_t ttlMs) {
    return redlock_client_rl_acquire($self, st, resource, ttlMs, REDLOCK_WAIT_NONE);
  }

  void rl_loadFunctions(rl_status *st) {
    char err[4096] = "";
    int rc = redlock_client_load_functions($self, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
  }

  size_t rl_nodeCount() {
    return redlock_client_node_count($self);
  }

  /* The URL of node i as given, password masked; "" out of range. */
  const char *rl_nodeUrl(size_t i) {
    return redlock_client_node_url($self, i);
  }

  /* Node i's wake-up listener: a REDLOCK_LISTENER_* state. */
  int rl_listenerState(rl_status *st, size_t i) {
    int state = redlock_client_listener_state($self, i, NULL, 0);
    if (state < 0)
      rl_fail(st, state, "node index out of range");
    return state;
  }

  /* Why it is down or refused; "" otherwise. */
  char *rl_listenerMessage(size_t i) {
    char *buf = calloc(1, RL_MESSAGE_SIZE); /* freed by the wrapper (%newobject) */
    if (buf)
      redlock_client_listener_state($self, i, buf, RL_MESSAGE_SIZE);
    return buf;
  }

  static const char *rl_version() {
    return redlock_version();
  }
}

/* The counting semaphore (docs/c-api.md): a lock handle that takes
 * `permits` of the `limit` permits of resource at once. */
%newobject redlock_client::rl_newSemaphore;
%extend redlock_client {
  redlock_lock *rl_newSemaphore(rl_status *st, const char *resource, uint32_t limit, uint32_t permits) {
    redlock_lock *l = NULL;
    char err[512] = "";
    int rc = redlock_lock_open_semaphore(&l, $self, resource, limit, permits, err, sizeof err);
    if (rc != 0) {
      rl_fail(st, rc, err);
      return NULL;
    }
    return l;
  }
}

%extend redlock_lock {
  ~redlock_lock() {
    redlock_lock_free($self);
  }

  void rl_acquire(rl_status *st, uint32_t ttlMs, int64_t waitMs) {
    int rc = redlock_lock_acquire($self, ttlMs, waitMs);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  void rl_extend(rl_status *st, uint32_t ttlMs) {
    int rc = redlock_lock_extend($self, ttlMs);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  void rl_release(rl_status *st) {
    int rc = redlock_lock_release($self); /* also stops auto-extension */
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  /* Releases unless the C library says there is nothing to release
   * (REDLOCK_ESTATE: never acquired, or already released), then frees the
   * handle whatever the outcome. An expired or lost lock is still released,
   * so close() reports REDLOCK_ELOST for it, as redlock_lock_release does. */
  void rl_close(rl_status *st) {
    int rc = redlock_lock_release($self);
    if (rc != 0 && rc != REDLOCK_ESTATE)
      rl_lock_fail(st, $self, rc);
    redlock_lock_free($self);
  }

  void rl_cancel() {
    redlock_lock_cancel($self);
  }

  void rl_cancelReset() {
    redlock_lock_cancel_reset($self);
  }

  int64_t rl_validityMs() {
    return redlock_lock_validity_ms($self);
  }

  bool rl_isHeld() {
    return redlock_lock_is_held($self) != 0;
  }

  /* Extensions of the current acquisition, automatic ones included. */
  int64_t rl_extensions() {
    return (int64_t)redlock_lock_extensions($self);
  }

  const char *rl_resource() {
    return redlock_lock_resource($self);
  }

  /* The bits of the unsigned token: counters start at 0 and grow by one per
   * acquisition, so a signed 64 bits holds them unless a counter key was
   * set near 2^63 by hand. */
  int64_t rl_fencingToken() {
    return (int64_t)redlock_lock_fencing_token($self);
  }

  /* Without a lost callback: is_held tells of a loss (Java adds a listener). */
  void rl_autoExtend(rl_status *st, uint32_t maxHoldMs) {
    int rc = redlock_lock_auto_extend($self, maxHoldMs, 0, NULL, NULL, NULL);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  /* The last round's report, one call per field: a redlock_node_outcome
   * (REDLOCK_NODE_*), or REDLOCK_EINVAL for an index out of range. */
  int rl_nodeOutcome(size_t i) {
    return redlock_lock_node_result($self, i, NULL, NULL, NULL, 0);
  }

  int rl_nodeCode(size_t i) {
    int code = 0;
    redlock_lock_node_result($self, i, &code, NULL, NULL, 0);
    return code;
  }

  int64_t rl_nodeRttUs(size_t i) {
    int64_t rtt = 0;
    redlock_lock_node_result($self, i, NULL, &rtt, NULL, 0);
    return rtt;
  }

  char *rl_nodeMessage(size_t i) {
    char *buf = calloc(1, RL_MESSAGE_SIZE); /* freed by the wrapper (%newobject) */
    if (buf)
      redlock_lock_node_result($self, i, NULL, NULL, buf, RL_MESSAGE_SIZE);
    return buf;
  }

  /* The lock's own acquisition policy (redlock_lock_get_options /
   * redlock_lock_set_options): per-lock settings on the client's connections. */
  redlock_lock_options *rl_getOptions(rl_status *st) {
    redlock_lock_options *o = malloc(sizeof *o);
    int rc;
    if (!o) {
      rl_fail(st, REDLOCK_ENOMEM, NULL);
      return NULL;
    }
    o->version = REDLOCK_LOCK_OPTIONS_VERSION;
    if ((rc = redlock_lock_get_options($self, o)) != 0) {
      rl_lock_fail(st, $self, rc);
      free(o);
      return NULL;
    }
    return o;
  }

  void rl_setOptions(rl_status *st, const redlock_lock_options *opts) {
    int rc = redlock_lock_set_options($self, opts);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  /* true if auto-extension was on; it waits for an extension under way. */
  bool rl_stopAutoExtend() {
    int rc = redlock_lock_auto_extend_stop($self);
    return rc == 0;
  }
}

/* One REDLOCK_OPT_* bit as a boolean property. */
%define RL_FLAG(NAME, BIT)
  void rl_set##NAME(bool on) { rl_flag_set(&$self->flags, BIT, on); }
  bool rl_get##NAME() { return ($self->flags & BIT) != 0; }
%enddef

/* The bits a client's options and a lock's share: REDLOCK_OPT_WAKE (true
 * wakes waiting acquires on a release; off by default, when they poll;
 * setWake is C's redlock_flags_set_wake and getWake its redlock_flags_wake,
 * so getWake is true after setWake(true), and with fair mode too), and
 * REDLOCK_OPT_FAIR (a free lock goes to the waiter that has waited longest). */
%define RL_WAKE_FAIR
  void rl_setWake(bool wake) { $self->flags = redlock_flags_set_wake($self->flags, wake); }
  bool rl_getWake() { return redlock_flags_wake($self->flags) != 0; }
  RL_FLAG(Fair, REDLOCK_OPT_FAIR)
%enddef


/* ---------------------------------------------------------------------------
 * Leader election (redlock_election_*): the class Election. A leader read
 * travels as one line, "present term revision value", so that no struct
 * crosses into the languages; observe takes the last line and returns the
 * next, or NULL when its wait ran out.
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_newElection;
%newobject redlock_election::rl_leaderLine;
%newobject redlock_election::rl_observeLine;


%extend redlock_client {
  redlock_election *rl_newElection(rl_status *st, const char *name) {
    redlock_election *e = NULL;
    char err[512] = "";
    int rc = redlock_election_open(&e, $self, name, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
    return e;
  }
}

%extend redlock_election {
  ~redlock_election() {
    redlock_election_free($self);
  }

  void rl_campaign(rl_status *st, const char *value, uint32_t ttlMs, int64_t waitMs) {
    int rc = redlock_election_campaign($self, value, ttlMs, waitMs);
    if (rc != 0)
      rl_fail(st, rc, redlock_election_errmsg($self));
  }

  void rl_proclaim(rl_status *st, const char *value) {
    int rc = redlock_election_proclaim($self, value);
    if (rc != 0)
      rl_fail(st, rc, redlock_election_errmsg($self));
  }

  /* Not leading is not an error (as etcd's Resign). */
  void rl_resign(rl_status *st) {
    int rc = redlock_election_resign($self);
    if (rc != 0 && rc != REDLOCK_ESTATE)
      rl_fail(st, rc, redlock_election_errmsg($self));
  }

  void rl_cancel() {
    redlock_election_cancel($self);
  }

  void rl_cancelReset() {
    redlock_election_cancel_reset($self);
  }

  bool rl_isLeader() {
    return redlock_election_is_leader($self) != 0;
  }

  int64_t rl_term() {
    return (int64_t)redlock_election_term($self);
  }

  char *rl_leaderLine(rl_status *st) {
    redlock_leader w;
    memset(&w, 0, sizeof w);
    w.version = REDLOCK_LEADER_VERSION;
    int rc = redlock_election_leader($self, &w);
    if (rc != 0) {
      rl_fail(st, rc, redlock_election_errmsg($self));
      return NULL;
    }
    return rl_leader_line(&w);
  }

  char *rl_observeLine(rl_status *st, const char *last, int64_t waitMs) {
    redlock_leader w;
    if (rl_parse_leader_line(last, &w) != 0) {
      rl_fail(st, REDLOCK_EINVAL, "not a leader line");
      return NULL;
    }
    int rc = redlock_election_observe($self, &w, waitMs);
    if (rc == REDLOCK_ETIMEDOUT)
      return NULL;
    if (rc != 0) {
      rl_fail(st, rc, redlock_election_errmsg($self));
      return NULL;
    }
    return rl_leader_line(&w);
  }
}

%extend redlock_lock_options {
  /* The C library's defaults for a lock (redlock_lock_options_init). */
  redlock_lock_options(rl_status *st) {
    redlock_lock_options *o = malloc(sizeof *o);
    int rc = o ? redlock_lock_options_init_version(o, REDLOCK_LOCK_OPTIONS_VERSION) : REDLOCK_ENOMEM;
    if (rc != 0) {
      rl_fail(st, rc, NULL);
      free(o);
      return NULL;
    }
    return o;
  }

  ~redlock_lock_options() {
    free($self);
  }

  RL_WAKE_FAIR
}

%extend redlock_options {
  /* The C library's defaults (redlock_options_init). */
  redlock_options(rl_status *st) {
    redlock_options *o = malloc(sizeof *o);
    if (o)
      redlock_options_init(o);
    else
      rl_fail(st, REDLOCK_ENOMEM, NULL);
    return o;
  }

  ~redlock_options() {
    rl_options_free($self);
    free((char *)$self->key_prefix);
    free((char *)$self->tls_ca_file);
    free((char *)$self->tls_ca_dir);
    free((char *)$self->tls_cert_file);
    free((char *)$self->tls_key_file);
    free((char *)$self->tls_server_name);
    free($self);
  }

  /* The struct only borrows key_prefix; this proxy owns a copy (the C
   * library copies it again when a client is created). */
  void rl_setKeyPrefix(rl_status *st, const char *prefix) { rl_set_owned(st, &$self->key_prefix, prefix); }
  const char *rl_getKeyPrefix() { return $self->key_prefix; }

  /* TLS for rediss:// nodes (see docs/security.md); null unsets. Paths are
   * read when a client is created. */
  void rl_setTlsCaFile(rl_status *st, const char *path) { rl_set_owned(st, &$self->tls_ca_file, path); }
  const char *rl_getTlsCaFile() { return $self->tls_ca_file; }
  void rl_setTlsCaDir(rl_status *st, const char *path) { rl_set_owned(st, &$self->tls_ca_dir, path); }
  const char *rl_getTlsCaDir() { return $self->tls_ca_dir; }
  void rl_setTlsCertFile(rl_status *st, const char *path) { rl_set_owned(st, &$self->tls_cert_file, path); }
  const char *rl_getTlsCertFile() { return $self->tls_cert_file; }
  void rl_setTlsKeyFile(rl_status *st, const char *path) { rl_set_owned(st, &$self->tls_key_file, path); }
  const char *rl_getTlsKeyFile() { return $self->tls_key_file; }
  void rl_setTlsServerName(rl_status *st, const char *name) { rl_set_owned(st, &$self->tls_server_name, name); }
  const char *rl_getTlsServerName() { return $self->tls_server_name; }
  /* Accepts any server certificate: no protection against interception. Tests only. */
  void rl_setTlsInsecureSkipVerify(bool insecure) { $self->tls_insecure_skip_verify = insecure ? 1 : 0; }
  bool rl_getTlsInsecureSkipVerify() { return $self->tls_insecure_skip_verify != 0; }

  /* REDLOCK_OPT_FUNCTIONS: release and extend with FCALL (Redlock.loadFunctions). */
  RL_FLAG(UseFunctions, REDLOCK_OPT_FUNCTIONS)
  /* REDLOCK_OPT_FENCING: every acquisition mints a fencing token (docs/fencing.md). */
  RL_FLAG(Fencing, REDLOCK_OPT_FENCING)
  /* REDLOCK_OPT_NO_QUARANTINE, said the positive way: true (the default)
   * keeps a node that may have lost its keys, or whose clock jumped, out of
   * the vote (docs/algorithm.md, "Quarantine"); false lets it vote at once. */
  void rl_setQuarantine(bool on) { rl_flag_set(&$self->flags, REDLOCK_OPT_NO_QUARANTINE, !on); }
  bool rl_getQuarantine() { return ($self->flags & REDLOCK_OPT_NO_QUARANTINE) == 0; }
  RL_WAKE_FAIR
}

/* ---------------------------------------------------------------------------
 * The read-write lock (docs/c-api.md, "Read-write locks"): its two sides are
 * lock handles, so every method above applies to them.
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_newReadLock;
%newobject redlock_client::rl_newWriteLock;
%extend redlock_client {
  redlock_lock *rl_newReadLock(rl_status *st, const char *resource) {
    redlock_lock *l = NULL;
    char err[512] = "";
    int rc = redlock_lock_open_read(&l, $self, resource, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
    return l;
  }
  redlock_lock *rl_newWriteLock(rl_status *st, const char *resource) {
    redlock_lock *l = NULL;
    char err[512] = "";
    int rc = redlock_lock_open_write(&l, $self, resource, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
    return l;
  }
}
%extend redlock_lock {
  /* A held write lock becomes a read lock, with no writer in between. */
  void rl_downgrade(rl_status *st) {
    int rc = redlock_lock_downgrade($self);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }
}

/* ---------------------------------------------------------------------------
 * The multi-resource lock (docs/c-api.md, "redlock_lock_new_multi"): a lock
 * handle that holds every resource of the list together, all or none, so
 * every method above applies to it. The list crosses as the language's
 * sequence (each language's file applies its node-list typemap).
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_newMultiLock;
%extend redlock_client {
  redlock_lock *rl_newMultiLock(rl_status *st, const char *const *resources, size_t n_resources) {
    redlock_lock *l = NULL;
    char err[512] = "";
    int rc = redlock_lock_open_multi(&l, $self, resources, n_resources, err, sizeof err);
    if (rc != 0)
      rl_fail(st, rc, err);
    return l;
  }
}
