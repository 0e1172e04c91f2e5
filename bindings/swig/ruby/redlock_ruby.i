/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_ruby.i: what Ruby adds to redlock.i (SWIG builds it as the extension
 * redlock/native, module Redlock::Native; the public API is the plain Ruby of
 * bindings/ruby/lib over it):
 *   - errors: Redlock::Native::Failure, whose #code is the REDLOCK_E* code and
 *     whose message is "REDLOCK_ENAME: detail"; the Ruby layer maps it onto its
 *     exception classes;
 *   - node and resource lists from Ruby Arrays of Strings;
 *   - every blocking acquire, campaign and observe runs without the GVL, so
 *     other Ruby threads run, and an interrupt (Thread#kill, Thread#raise,
 *     Ctrl-C) cancels its wait;
 *   - LostWatch: a lost-lock notice from the C auto-extend thread, waited for
 *     by a Ruby thread without the GVL (the C thread never calls into Ruby). */

%{
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <ruby/thread.h>

static VALUE rl_rb_cFailure = Qnil;

/* An interrupt (Thread#raise, Thread#kill, a signal's exception) that ended a
 * blocking call, caught by rb_protect; the wrapper's argout typemap re-raises
 * it with rb_jump_tag once the wrapper has freed what it holds. Per thread:
 * set and consumed within one wrapped call. */
static __thread int rl_rb_jump_state;

/* Raises Redlock::Native::Failure for code with detail (freed first: the raise
 * does not return), or the interrupt that cancelled the call. */
static void rl_rb_raise(rl_status *st) {
    char buf[1024];
    VALUE exc;
    int jump = rl_rb_jump_state;
    if (jump) {
        rl_rb_jump_state = 0;
        free(st->detail);
        st->detail = NULL;
        rb_jump_tag(jump);
    }
    snprintf(buf, sizeof buf, "%s: %s", redlock_error_name(st->code),
             st->detail && *st->detail ? st->detail : redlock_strerror(st->code));
    free(st->detail);
    st->detail = NULL;
    exc = rb_exc_new_cstr(rl_rb_cFailure, buf);
    rb_iv_set(exc, "@code", INT2NUM(st->code));
    rb_exc_raise(exc);
}

/* ---- Blocking calls without the GVL -------------------------------------- */
/* One blocking call of the C library (an acquire, a campaign, an observe) run
 * without the GVL, with Ruby's interrupts cancelling it through the handle's
 * cancel (thread- and async-signal-safe; the call returns REDLOCK_ECANCELED
 * after the round in flight, or its result if that round decided). */
struct rl_rb_blocking {
    int (*call)(void *args);       /* the C call, on args */
    void *args;
    void (*cancel)(void *handle);  /* the handle's cancel and cancel_reset */
    void (*cancel_reset)(void *handle);
    void *handle;
    int rc;
    int called;      /* the call ran */
    int cancelled;   /* the unblocking function cancelled it */
};

static void *rl_rb_blocking_nogvl(void *p) {
    struct rl_rb_blocking *b = p;
    b->called = 1;
    b->rc = b->call(b->args);
    return NULL;
}

static VALUE rl_rb_check_ints(VALUE unused) {
    (void)unused;
    rb_thread_check_ints();
    return Qnil;
}

/* Called by Ruby to interrupt the wait. */
static void rl_rb_blocking_ubf(void *p) {
    struct rl_rb_blocking *b = p;
    b->cancelled = 1;
    b->cancel(b->handle);
}

static int rl_rb_blocking_run(struct rl_rb_blocking *b) {
    for (;;) {
        int state = 0;
        b->called = b->cancelled = 0;
        b->rc = REDLOCK_ECANCELED;
        /* No canceller can run now (the GVL is held): clear an earlier interrupt's cancel. */
        b->cancel_reset(b->handle);
        /* The 2 variant neither raises nor runs the call while an interrupt is
         * pending, so nothing jumps over this frame or the wrapper's. */
        rb_thread_call_without_gvl2(rl_rb_blocking_nogvl, b, rl_rb_blocking_ubf, b);
        b->cancel_reset(b->handle);
        if (b->called && !(b->cancelled && b->rc == REDLOCK_ECANCELED))
            return b->rc; /* done, or cancelled by a cancel from elsewhere */
        /* An interrupt: run it. Ruby's own (a finalizer, a timer, Thread#wakeup) raise
         * nothing, and the call starts again; an exception (Thread#raise, #kill, a
         * signal's) ends the call: the argout typemap re-raises it. */
        rb_protect(rl_rb_check_ints, Qnil, &state);
        if (state) {
            rl_rb_jump_state = state;
            return REDLOCK_ECANCELED;
        }
    }
}

struct rl_rb_acquire_args { redlock_lock *lock; uint32_t ttl_ms; int64_t wait_ms; };
static int rl_rb_acquire_call(void *p) {
    struct rl_rb_acquire_args *a = p;
    return redlock_lock_acquire(a->lock, a->ttl_ms, a->wait_ms);
}
static void rl_rb_lock_cancel(void *h) { redlock_lock_cancel(h); }
static void rl_rb_lock_cancel_reset(void *h) { redlock_lock_cancel_reset(h); }

static int rl_rb_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms) {
    struct rl_rb_acquire_args a = { lock, ttl_ms, wait_ms };
    struct rl_rb_blocking b = { rl_rb_acquire_call, &a, rl_rb_lock_cancel, rl_rb_lock_cancel_reset, lock, 0, 0, 0 };
    if (!lock)
        return redlock_lock_acquire(lock, ttl_ms, wait_ms);
    return rl_rb_blocking_run(&b);
}

struct rl_rb_campaign_args { redlock_election *e; const char *value; uint32_t ttl_ms; int64_t wait_ms; };
static int rl_rb_campaign_call(void *p) {
    struct rl_rb_campaign_args *a = p;
    return redlock_election_campaign(a->e, a->value, a->ttl_ms, a->wait_ms);
}
struct rl_rb_observe_args { redlock_election *e; redlock_leader *w; int64_t wait_ms; };
static int rl_rb_observe_call(void *p) {
    struct rl_rb_observe_args *a = p;
    return redlock_election_observe(a->e, a->w, a->wait_ms);
}
static void rl_rb_election_cancel(void *h) { redlock_election_cancel(h); }
static void rl_rb_election_cancel_reset(void *h) { redlock_election_cancel_reset(h); }

static int rl_rb_election_campaign(redlock_election *e, const char *value, uint32_t ttl_ms, int64_t wait_ms) {
    struct rl_rb_campaign_args a = { e, value, ttl_ms, wait_ms };
    struct rl_rb_blocking b = { rl_rb_campaign_call, &a, rl_rb_election_cancel, rl_rb_election_cancel_reset, e,
                                0, 0, 0 };
    if (!e)
        return redlock_election_campaign(e, value, ttl_ms, wait_ms);
    return rl_rb_blocking_run(&b);
}

static int rl_rb_election_observe(redlock_election *e, redlock_leader *w, int64_t wait_ms) {
    struct rl_rb_observe_args a = { e, w, wait_ms };
    struct rl_rb_blocking b = { rl_rb_observe_call, &a, rl_rb_election_cancel, rl_rb_election_cancel_reset, e,
                                0, 0, 0 };
    if (!e)
        return redlock_election_observe(e, w, wait_ms);
    return rl_rb_blocking_run(&b);
}
/* Every acquire the wrapper code of redlock.i makes (Lock#acquire, Redlock#acquire,
 * #tryAcquire), and every campaign and observe of Election, goes through them: this
 * block comes after redlock.h and before them. */
#define redlock_lock_acquire(lock, ttl_ms, wait_ms) rl_rb_lock_acquire((lock), (ttl_ms), (wait_ms))
#define redlock_election_campaign(e, value, ttl_ms, wait_ms) rl_rb_election_campaign((e), (value), (ttl_ms), (wait_ms))
#define redlock_election_observe(e, w, wait_ms) rl_rb_election_observe((e), (w), (wait_ms))

/* ---- Lost-lock notices ------------------------------------------------------ */
typedef struct rl_lost_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;         /* the Ruby proxy, plus one while the C library holds it */
    int code;         /* 0 until the loss: REDLOCK_ELOST, REDLOCK_EEXPIRED, REDLOCK_ELIMIT */
    int ended;        /* auto-extension is over: no notice can follow */
    int interrupted;  /* a Ruby interrupt woke the waiter */
    char message[RL_MESSAGE_SIZE];
} rl_lost_watch;

static void rl_watch_unref(rl_lost_watch *w) {
    int last;
    pthread_mutex_lock(&w->mu);
    last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
    }
}

/* On the C auto-extend thread: store and signal, never call Ruby. */
static void rl_watch_on_lost(redlock_lock *lock, int code, const char *message, void *userdata) {
    rl_lost_watch *w = userdata;
    (void)lock;
    if (code == REDLOCK_EATRISK)
        return;
    pthread_mutex_lock(&w->mu);
    if (!w->code) {
        w->code = code;
        snprintf(w->message, sizeof w->message, "%s", message ? message : "");
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void rl_watch_userdata_free(void *userdata) {
    rl_lost_watch *w = userdata;
    pthread_mutex_lock(&w->mu);
    w->ended = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    rl_watch_unref(w);
}

struct rl_rb_wait {
    rl_lost_watch *w;
    int64_t ms;
};

static void *rl_watch_wait_nogvl(void *p) {
    struct rl_rb_wait *a = p;
    rl_lost_watch *w = a->w;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += a->ms / 1000;
    until.tv_nsec += (long)(a->ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->code && !w->ended && !w->interrupted)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT)
            break;
    w->interrupted = 0;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void rl_watch_wait_ubf(void *p) {
    rl_lost_watch *w = ((struct rl_rb_wait *)p)->w;
    pthread_mutex_lock(&w->mu);
    w->interrupted = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}
%}

/* Failure, raised by the argout typemap below. */
%init %{
  rl_rb_cFailure = rb_define_class_under(mNative, "Failure", rb_eStandardError);
  rb_define_attr(rl_rb_cFailure, "code", 1, 0);
  rb_gc_register_address(&rl_rb_cFailure);
%}

%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0)
    rl_rb_raise($1); /* frees the detail: the raise skips freearg */
}

/* (const char *const *nodes, size_t n_nodes) from an Array of Strings. The
 * pointer array is a Ruby temporary buffer (ALLOCV), so a raise leaks nothing. */
%typemap(in) (const char *const *nodes, size_t n_nodes) (VALUE rl_tmp = 0) {
  long rl_i, rl_n;
  const char **rl_p;
  Check_Type($input, T_ARRAY);
  rl_n = RARRAY_LEN($input);
  rl_p = ALLOCV_N(const char *, rl_tmp, rl_n ? rl_n : 1);
  for (rl_i = 0; rl_i < rl_n; rl_i++) {
    VALUE rl_e = rb_ary_entry($input, rl_i);
    rl_p[rl_i] = StringValueCStr(rl_e); /* a String without NUL, kept alive by the Array */
  }
  $1 = ($1_ltype)rl_p;
  $2 = (size_t)rl_n;
}
%typemap(freearg) (const char *const *nodes, size_t n_nodes) { if (rl_tmp$argnum) ALLOCV_END(rl_tmp$argnum); }
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *resources, size_t n_resources) }

/* The many-lock acquire is Tcl's for now. */
%ignore redlock_lock_acquire_many;
%ignore redlock_client::rl_fenceSql;   /* not wrapped in Ruby yet */

%rename(LostWatch) rl_lost_watch;
%nodefaultctor rl_lost_watch;
typedef struct rl_lost_watch {} rl_lost_watch;
%newobject rl_lost_watch::rl_message;

%extend rl_lost_watch {
  rl_lost_watch() {
    rl_lost_watch *w = calloc(1, sizeof *w);
    if (!w)
      rb_raise(rb_eNoMemError, "LostWatch");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->refs = 1;
    return w;
  }

  ~rl_lost_watch() {
    rl_watch_unref($self);
  }

  /* Waits up to ms (without the GVL) for the loss or the end of
   * auto-extension; returns the loss's REDLOCK_E* code, or 0. */
  int rl_wait(int64_t ms) {
    struct rl_rb_wait a = { $self, ms < 0 ? 0 : ms };
    rb_thread_call_without_gvl(rl_watch_wait_nogvl, &a, rl_watch_wait_ubf, &a);
    pthread_mutex_lock(&$self->mu);
    int code = $self->code;
    pthread_mutex_unlock(&$self->mu);
    return code;
  }

  int rl_code() {
    pthread_mutex_lock(&$self->mu);
    int code = $self->code;
    pthread_mutex_unlock(&$self->mu);
    return code;
  }

  bool rl_ended() {
    pthread_mutex_lock(&$self->mu);
    bool ended = $self->ended != 0;
    pthread_mutex_unlock(&$self->mu);
    return ended;
  }

  char *rl_message() {
    char *m;
    pthread_mutex_lock(&$self->mu);
    m = rl_strdup($self->message);
    pthread_mutex_unlock(&$self->mu);
    return m;
  }
}

%extend redlock_lock {
  /* Auto-extension that tells watch of a loss (redlock.i's autoExtend tells
   * nobody). */
  void rl_autoExtendWatch(rl_status *st, uint32_t maxHoldMs, rl_lost_watch *watch) {
    int rc;
    pthread_mutex_lock(&watch->mu);
    watch->refs++;
    pthread_mutex_unlock(&watch->mu);
    rc = redlock_lock_auto_extend($self, maxHoldMs, 0, rl_watch_on_lost, watch, rl_watch_userdata_free);
    if (rc != 0) {
      rl_watch_unref(watch); /* userdata_free is not called on an error */
      rl_lock_fail(st, $self, rc);
    }
  }
}
