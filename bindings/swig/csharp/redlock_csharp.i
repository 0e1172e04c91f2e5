/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_csharp.i: what C# adds to redlock.i. SWIG generates an internal
 * P/Invoke layer (namespace RedLockNet.Native: Redlock, Lock, Options,
 * LockOptions, ...); the public classes over it are plain C#
 * (bindings/csharp/: RedLockFactory, IRedLock, ...), as Java's are over its
 * *Native classes. Errors cross as a pending RedLockException carrying the
 * REDLOCK_E* code; the asynchronous acquire and the lost-lock notice cross as
 * events that one C# thread takes from a queue (rl_cs_next_event), each with
 * a 64-bit token naming the C# waiter or lock. */

/* Nothing generated is public: the hand-written classes are the API. */
%typemap(csclassmodifiers) SWIGTYPE "internal class"
%typemap(csclassmodifiers) enum SWIGTYPE "internal enum"
%pragma(csharp) moduleclassmodifiers="internal class"
%pragma(csharp) imclassclassmodifiers="internal class"

/* ---------------------------------------------------------------------------
 * Errors: the argout of rl_status calls a C# delegate (registered by the
 * intermediary class's static constructor) that makes the RedLockException
 * for the code and leaves it pending; the proxy method throws it on return.
 * ------------------------------------------------------------------------- */
%insert(runtime) %{
typedef void (SWIGSTDCALL *rl_cs_raise_fn)(int code, const char *message);
static rl_cs_raise_fn rl_cs_raise = NULL;
SWIGEXPORT void SWIGSTDCALL rl_cs_register_raise(rl_cs_raise_fn fn) {
    rl_cs_raise = fn;
}
%}

%typemap(argout, canthrow=1, noblock=1) rl_status *st {
  if ($1->code != 0) {
    if (rl_cs_raise)
      rl_cs_raise($1->code, $1->detail && *$1->detail ? $1->detail : redlock_strerror($1->code));
    free($1->detail);
    $1->detail = NULL;
    return $null;
  }
}

%pragma(csharp) imclasscode=%{
  internal delegate void RaiseDelegate(int code, string message);
  static readonly RaiseDelegate raiseDelegate = Raise;
  [global::System.Runtime.InteropServices.DllImport("$dllimport", EntryPoint="rl_cs_register_raise")]
  static extern void RegisterRaise(RaiseDelegate fn);
  static void Raise(int code, string message) {
    SWIGPendingException.Set(RedLockNet.RedLockException.FromNative(code, message));
  }
  internal static readonly bool RaiseRegistered = RegisterRaiseOnce();
  static bool RegisterRaiseOnce() {
    RegisterRaise(raiseDelegate);
    return true;
  }
%}

/* A handle used after Dispose has a null pointer: an exception, not a crash. */
%typemap(check, canthrow=1, noblock=1) struct redlock_client *self, struct redlock_lock *self,
                        struct redlock_options *self, struct redlock_lock_options *self,
                        struct redlock_election *self {
  if (!$1) {
    if (rl_cs_raise)
      rl_cs_raise(REDLOCK_ESTATE, "the handle is disposed");
    return $null;
  }
}

/* The node list: a string[] (marshalled as UTF-8-less LPStr; node URLs are
 * ASCII) and its length as the next argument (size_t is uint). */
%typemap(ctype) const char *const *nodes "char **"
%typemap(imtype, inattributes="[global::System.Runtime.InteropServices.In, global::System.Runtime.InteropServices.MarshalAs(global::System.Runtime.InteropServices.UnmanagedType.LPArray, ArraySubType=global::System.Runtime.InteropServices.UnmanagedType.LPStr)]") const char *const *nodes "string[]"
%typemap(cstype) const char *const *nodes "string[]"
%typemap(csin) const char *const *nodes "$csinput"
%typemap(in) const char *const *nodes %{ $1 = ($1_ltype)$input; %}

/* The multi-resource lock is not in this binding yet. close frees the handle,
 * which SWIG's C# proxies cannot be told (%delobject is Java's and Tcl's):
 * C# calls release and then Dispose. */
%ignore redlock_client::rl_newMultiLock;
%ignore redlock_client::rl_fenceSql;       /* not wrapped in C# yet: no string-array typemap for it */
%ignore redlock_lock::rl_close;

%{
/* The asynchronous acquire and the lost-lock notice. The C library calls
 * back on its own threads; a callback into Mono from such a thread attaches
 * it to the runtime, and Mono 6.8 then hangs at exit. So no C# code runs on
 * the library's threads: the callbacks queue an event (a token that names
 * the C# waiter or lock, and the outcome), and one C# thread of the binding
 * takes them with rl_cs_next_event and completes the waiter's task. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

enum { RL_CS_DONE = 1, RL_CS_LOST = 2, RL_CS_FREE = 3 };

typedef struct rl_cs_event {
    struct rl_cs_event *next;
    int kind;
    int code;
    long long token;
    char message[RL_MESSAGE_SIZE];
} rl_cs_event;

/* The queue, and a pipe that wakes its reader. The reader waits in poll(),
 * not on a condition variable: at exit Mono stops its background threads
 * with a signal, which ends a poll (EINTR) but not a pthread_cond_wait. */
static pthread_mutex_t rl_cs_mu = PTHREAD_MUTEX_INITIALIZER;
static rl_cs_event *rl_cs_head, *rl_cs_tail;
static int rl_cs_pipe[2] = { -1, -1 };
static pthread_once_t rl_cs_once = PTHREAD_ONCE_INIT;

static void rl_cs_init(void) {
    if (pipe(rl_cs_pipe) != 0) {
        rl_cs_pipe[0] = rl_cs_pipe[1] = -1;
        return;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(rl_cs_pipe[i], F_SETFL, fcntl(rl_cs_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(rl_cs_pipe[i], F_SETFD, FD_CLOEXEC);
    }
}

static void rl_cs_push(int kind, long long token, int code, const char *message) {
    rl_cs_event *e = calloc(1, sizeof *e);
    if (!e)
        return; /* out of memory: the waiter is not told */
    e->kind = kind;
    e->token = token;
    e->code = code;
    if (message)
        snprintf(e->message, sizeof e->message, "%s", message);
    pthread_once(&rl_cs_once, rl_cs_init);
    pthread_mutex_lock(&rl_cs_mu);
    if (rl_cs_tail)
        rl_cs_tail->next = e;
    else
        rl_cs_head = e;
    rl_cs_tail = e;
    pthread_mutex_unlock(&rl_cs_mu);
    if (rl_cs_pipe[1] >= 0) {
        ssize_t ignored = write(rl_cs_pipe[1], "", 1); /* a full pipe has woken the reader already */
        (void)ignored;
    }
}

/* The next event: its kind (RL_CS_*), with token, code and message
 * (message_size bytes, NUL-terminated) filled in; or 0 when the wait was
 * interrupted or there is nothing yet (the caller calls again). */
SWIGEXPORT int SWIGSTDCALL rl_cs_next_event(long long *token, int *code, char *message, int message_size) {
    rl_cs_event *e;
    int kind;
    pthread_once(&rl_cs_once, rl_cs_init);
    pthread_mutex_lock(&rl_cs_mu);
    e = rl_cs_head;
    if (e) {
        rl_cs_head = e->next;
        if (!rl_cs_head)
            rl_cs_tail = NULL;
    }
    pthread_mutex_unlock(&rl_cs_mu);
    if (!e) {
        struct pollfd p;
        char drain[64];
        if (rl_cs_pipe[0] < 0)
            return -1;
        p.fd = rl_cs_pipe[0];
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, -1) > 0)
            while (read(rl_cs_pipe[0], drain, sizeof drain) > 0) {
            }
        return 0;
    }
    kind = e->kind;
    *token = e->token;
    *code = e->code;
    if (message && message_size > 0)
        snprintf(message, (size_t)message_size, "%s", e->message);
    free(e);
    return kind;
}

static void rl_cs_on_done(redlock_lock *lock, int rc, void *userdata) {
    (void)lock;
    rl_cs_push(RL_CS_DONE, (long long)(intptr_t)userdata, rc, NULL);
}

static void rl_cs_on_lost(redlock_lock *lock, int code, const char *message, void *userdata) {
    (void)lock;
    rl_cs_push(RL_CS_LOST, (long long)(intptr_t)userdata, code, message);
}

static void rl_cs_on_free(void *userdata) {
    rl_cs_push(RL_CS_FREE, (long long)(intptr_t)userdata, 0, NULL);
}

static void rl_cs_on_elected(redlock_election *e, int rc, void *userdata) {
    (void)e;
    rl_cs_push(RL_CS_DONE, (long long)(intptr_t)userdata, rc, NULL);
}
%}

%extend redlock_lock {
  /* redlock_lock_acquire_async: 0 when under way (the outcome comes to the
   * registered done delegate with token), or the code it returned at once. */
  int rl_acquireAsync(uint32_t ttlMs, int64_t waitMs, long long token) {
    return redlock_lock_acquire_async($self, ttlMs, waitMs, rl_cs_on_done, (void *)(intptr_t)token);
  }

  /* Auto-extension with the lost delegate told, with token; the free
   * delegate is told once no notice with token can follow. */
  void rl_autoExtendNotify(rl_status *st, uint32_t maxHoldMs, long long token) {
    int rc = redlock_lock_auto_extend($self, maxHoldMs, 0, rl_cs_on_lost, (void *)(intptr_t)token,
                                      rl_cs_on_free);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  /* The detail of the last failure ("" if none). */
  const char *rl_errmsg() {
    return redlock_lock_errmsg($self);
  }
}

%extend redlock_election {
  /* redlock_election_campaign_async, completed as rl_acquireAsync is: 0
   * when under way, or the code it returned at once. */
  int rl_campaignAsync(const char *value, uint32_t ttlMs, int64_t waitMs, long long token) {
    return redlock_election_campaign_async($self, value, ttlMs, waitMs, rl_cs_on_elected, (void *)(intptr_t)token);
  }

  /* The detail of the last failure ("" if none). */
  const char *rl_errmsg() {
    return redlock_election_errmsg($self);
  }
}

%extend redlock_lock {
  /* redlock_lock_release_async, completed as rl_acquireAsync is. */
  int rl_releaseAsync(long long token) {
    return redlock_lock_release_async($self, rl_cs_on_done, (void *)(intptr_t)token);
  }
}
