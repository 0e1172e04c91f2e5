/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_java.i: the Java typemaps of redlock.i. SWIG generates the
 * package-private classes RedlockNative, LockNative, OptionsNative,
 * LockOptionsNative and ErrorCodes; the public classes over them are plain
 * Java (bindings/java/src/main/java/io/redlock/), and the JNI written by hand
 * is plain C (redlock_jni.c). */

%{
#include "redlock_jni.h"
/* The callback hooks of redlock.i. */
#define rl_open rl_java_open
#define rl_options_free rl_java_options_free
%}

/* ---------------------------------------------------------------------------
 * Errors: io.redlock.RedlockException.fromNative picks the subclass for the
 * code. No early return: the wrapper goes on to free the converted arguments
 * and returns its zero result, which Java ignores because an exception is
 * pending.
 * ------------------------------------------------------------------------- */
%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0)
    rl_java_throw(jenv, $1->code, $1->detail);
}

/* A handle used after close() has a NULL pointer: an exception, not a crash. */
%typemap(in, noblock=1) struct redlock_client *self, struct redlock_lock *self,
                        struct redlock_options *self, struct redlock_lock_options *self,
                        struct redlock_election *self {
  $1 = *($&1_ltype)&$input;
  if (!$1) {
    rl_java_throw(jenv, REDLOCK_ESTATE, "the handle is closed");
    return $null;
  }
}

/* The REDLOCK_E* codes of redlock.h, as compile-time constants of
 * RedlockException (RedlockException.ELOST): a code appended to the header
 * appears there at the next build. ErrorCodes is its superclass rather than
 * an interface, so that the exception implements nothing, and public, so
 * that reflection reads the constants through RedlockException as before. */
%rename("$ignore", %$isconstant) "";
%rename("$ignore", %$isenum) "";
%rename("$ignore", %$isenumitem) "";
%include "enumtypeunsafe.swg"
%javaconst(1);
%rename(ErrorCodes) redlock_error_code;
%rename("%(strip:[REDLOCK_])s", %$isenumitem, match$parentNode$name="redlock_error_code") "";
%ignore REDLOCK_OK; /* success is no exception's code */
%typemap(javaimports) enum redlock_error_code %{
/**
 * The REDLOCK_E* codes of redlock.h, generated from it: the base of
 * {@link RedlockException}, read them as RedlockException.ELOST and so on.
 */%}
%typemap(javaclassmodifiers) enum redlock_error_code "public abstract class"
%typemap(javabase) enum redlock_error_code "RuntimeException"
%typemap(javacode) enum redlock_error_code %{
  private static final long serialVersionUID = 1L;

  ErrorCodes(String message) {
    super(message);
  }
%}

/* The other enums of redlock.h, as package-private constants that the Java
 * enums RedlockEvent.Type, ListenerState and NodeResult.Outcome map from (a
 * value newer than those is their UNKNOWN). C enum items share one scope,
 * so they keep their kind: NodeOutcomeCodes.NODE_REFUSED. */
%rename(EventTypeCodes) redlock_event_type;
%rename(ListenerStateCodes) redlock_listener_state;
%rename(NodeOutcomeCodes) redlock_node_outcome;
%rename("%(strip:[REDLOCK_])s", %$isenumitem, match$parentNode$name="redlock_event_type") "";
%rename("%(strip:[REDLOCK_])s", %$isenumitem, match$parentNode$name="redlock_listener_state") "";
%rename("%(strip:[REDLOCK_])s", %$isenumitem, match$parentNode$name="redlock_node_outcome") "";
%typemap(javaclassmodifiers) enum redlock_event_type, enum redlock_listener_state,
                              enum redlock_node_outcome "final class"

/* ---------------------------------------------------------------------------
 * Arguments. Strings cross as UTF-8 bytes, so a resource name gives the same
 * Redis key from Java as from C, Python or Go (JNI's own string functions
 * would use modified UTF-8). Node lists: null elements are passed through so
 * the C library, not the binding, decides they are invalid.
 * ------------------------------------------------------------------------- */
%typemap(jni)    (const char *const *nodes, size_t n_nodes) "jobjectArray"
%typemap(jtype)  (const char *const *nodes, size_t n_nodes) "byte[][]"
%typemap(jstype) (const char *const *nodes, size_t n_nodes) "String[]"
%typemap(javain) (const char *const *nodes, size_t n_nodes) "NativeSupport.utf8All($javainput)"
%typemap(in) (const char *const *nodes, size_t n_nodes) {
  char **rl_list = NULL;
  size_t rl_n = 0;
  if ($input && rl_java_node_list(jenv, $input, &rl_list, &rl_n))
    return $null;
  $1 = ($1_ltype)rl_list;
  $2 = rl_n;
}
%typemap(freearg, noblock=1) (const char *const *nodes, size_t n_nodes) { rl_java_free_list((char **)$1, $2); }

%typemap(jni)    const char *, char * "jbyteArray"
%typemap(jtype)  const char *, char * "byte[]"
%typemap(jstype) const char *, char * "String"
%typemap(javain) const char * "NativeSupport.utf8($javainput)"
%typemap(javaout) const char *, char * {
    return NativeSupport.string($jnicall);
  }
%typemap(in, noblock=1) const char * {
  $1 = NULL;
  if ($input && rl_java_cstring(jenv, $input, "$1_name", (char **)&$1))
    return $null;
}
%typemap(freearg, noblock=1) const char * { free((char *)$1); }
%typemap(out, noblock=1) const char *, char * { $result = $1 ? rl_java_bytes(jenv, $1) : NULL; }

/* Java has no unsigned types: a uint32_t arrives as a long and must fit. */
%typemap(in, noblock=1) uint32_t {
  if (rl_java_uint32(jenv, $input, "$1_name", &$1))
    return $null;
}

/* ---------------------------------------------------------------------------
 * The generated classes: package-private, abstract, each the base of the
 * public class of the same name without "Native". NativeHandle holds the C
 * pointer, freed by close() or, if the program forgets, by a Cleaner.
 * ------------------------------------------------------------------------- */
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeSupport.loadLibrary();
  }
%}

%rename(RedlockNative) redlock_client;
%rename(LockNative) redlock_lock;
%rename(OptionsNative) redlock_options;
%rename(LockOptionsNative) redlock_lock_options;
%rename(ElectionNative) redlock_election;

%define RL_JAVA_HANDLE(CTYPE, JNAME)
%typemap(javabase) CTYPE "NativeHandle"
%typemap(javaclassmodifiers) CTYPE "abstract class"
%typemap(javabody) CTYPE %{
  $javaclassname(long cPtr, boolean cMemoryOwn) {
    super(cPtr, cMemoryOwn, $imclassname::delete_##JNAME);
  }
%}
%typemap(javafinalize) CTYPE ""
%typemap(javadestruct, methodname="swigDelete", methodmodifiers="private", parameters="") CTYPE {
    swigFree();
  }
%enddef

RL_JAVA_HANDLE(struct redlock_client, RedlockNative)
RL_JAVA_HANDLE(struct redlock_lock, LockNative)
RL_JAVA_HANDLE(struct redlock_options, OptionsNative)
RL_JAVA_HANDLE(struct redlock_lock_options, LockOptionsNative)
RL_JAVA_HANDLE(struct redlock_election, ElectionNative)

/* Handles returned and taken are the public classes. Freed options must not
 * silently mean "the defaults" (a NULL pointer): getCPtrChecked throws. */
%typemap(jstype) redlock_lock * "Lock"
%typemap(javaout) redlock_lock * {
    long cPtr = $jnicall;
    return (cPtr == 0) ? null : new Lock(cPtr, $owner);
  }
%typemap(jstype) redlock_election * "Election"
%typemap(javaout) redlock_election * {
    long cPtr = $jnicall;
    return (cPtr == 0) ? null : new Election(cPtr, $owner);
  }
%typemap(jstype) redlock_lock_options * "LockOptions"
%typemap(javaout) redlock_lock_options * {
    long cPtr = $jnicall;
    return (cPtr == 0) ? null : new LockOptions(cPtr, $owner);
  }
%typemap(jstype) const redlock_options *options "Options"
%typemap(javain) const redlock_options *options "Options.getCPtrChecked($javainput)"
%typemap(jstype) const redlock_lock_options *opts "LockOptions"
%typemap(javain) const redlock_lock_options *opts "LockOptions.getCPtrChecked($javainput)"

/* Methods that the public classes wrap (with their Javadoc and their
 * synchronization): package-private, named ...Native. */
%define RL_JAVA_NATIVE(METHOD, JNAME)
%rename(JNAME) METHOD;
%javamethodmodifiers METHOD "";
%enddef
%javamethodmodifiers redlock_client::redlock_client "";
RL_JAVA_NATIVE(redlock_client::rl_newLock, newLockNative)
RL_JAVA_NATIVE(redlock_client::rl_loadFunctions, loadFunctionsNative)
RL_JAVA_NATIVE(redlock_client::rl_nodeCount, nodeCountNative)
RL_JAVA_NATIVE(redlock_client::rl_nodeUrl, nodeUrlNative)
RL_JAVA_NATIVE(redlock_client::rl_listenerState, listenerStateNative)
RL_JAVA_NATIVE(redlock_client::rl_listenerMessage, listenerMessageNative)
RL_JAVA_NATIVE(redlock_client::rl_version, versionNative)
RL_JAVA_NATIVE(redlock_client::rl_newSemaphore, newSemaphoreNative)
RL_JAVA_NATIVE(redlock_lock::rl_acquire, acquireNative)
RL_JAVA_NATIVE(redlock_lock::rl_extend, extendNative)
RL_JAVA_NATIVE(redlock_lock::rl_release, releaseNative)
RL_JAVA_NATIVE(redlock_lock::rl_close, closeNative)
RL_JAVA_NATIVE(redlock_lock::rl_cancel, cancelNative)
RL_JAVA_NATIVE(redlock_lock::rl_cancelReset, resetCancelNative)
RL_JAVA_NATIVE(redlock_lock::rl_validityMs, validityMsNative)
RL_JAVA_NATIVE(redlock_lock::rl_isHeld, isHeldNative)
RL_JAVA_NATIVE(redlock_lock::rl_extensions, extensionsNative)
RL_JAVA_NATIVE(redlock_lock::rl_resource, resourceNative)
RL_JAVA_NATIVE(redlock_lock::rl_fencingToken, fencingTokenNative)
RL_JAVA_NATIVE(redlock_lock::rl_getOptions, getOptionsNative)
RL_JAVA_NATIVE(redlock_lock::rl_setOptions, setOptionsNative)
RL_JAVA_NATIVE(redlock_lock::rl_stopAutoExtend, stopAutoExtendNative)
RL_JAVA_NATIVE(redlock_lock::rl_autoExtendWith, autoExtendNative)
RL_JAVA_NATIVE(redlock_lock::rl_acquireAsyncWith, acquireAsyncNative)
RL_JAVA_NATIVE(redlock_lock::rl_releaseAsyncWith, releaseAsyncNative)
RL_JAVA_NATIVE(redlock_lock::rl_extendAsyncWith, extendAsyncNative)
RL_JAVA_NATIVE(redlock_lock::rl_nodeResult, nodeResultNative)
/* the read-write lock (RedlockReadWriteLock.java) */
RL_JAVA_NATIVE(redlock_client::rl_newReadLock, newReadLockNative)
RL_JAVA_NATIVE(redlock_client::rl_newWriteLock, newWriteLockNative)
RL_JAVA_NATIVE(redlock_lock::rl_downgrade, downgradeNative)
/* many locks' attempts at once (Redlock.tryAcquireMany) */
RL_JAVA_NATIVE(redlock_client::rl_acquireMany, acquireManyNative)
RL_JAVA_NATIVE(redlock_client::rl_acquireManyMax, acquireManyMaxNative)
/* the header's macros that Java's constants read (Redlock.WAIT_*, Options.UNREACHABLE_*) */
RL_JAVA_NATIVE(redlock_client::rl_constant, constantNative)
/* the multi-resource lock: its names cross as the node list does */
RL_JAVA_NATIVE(redlock_client::rl_newMultiLock, newMultiLockNative)
/* the store's side of fencing (Fence.java): the C library's script, key name and refusal */
RL_JAVA_NATIVE(redlock_client::rl_fenceScript, fenceScriptNative)
RL_JAVA_NATIVE(redlock_client::rl_fenceScriptSha1, fenceScriptSha1Native)
RL_JAVA_NATIVE(redlock_client::rl_fenceKey, fenceKeyNative)
RL_JAVA_NATIVE(redlock_client::rl_fenceRefusal, fenceRefusalNative)
/* the statements of a fenced SQL write (Fence.sqlUpsert, Fence.sqlUpdate): the column lists
 * cross as the node list does */
RL_JAVA_NATIVE(redlock_client::rl_fenceSql, fenceSqlNative)
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *key_columns, size_t n_key) }
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *value_columns, size_t n_values) }
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *resources, size_t n_resources) }
%javamethodmodifiers redlock_options::redlock_options "";
RL_JAVA_NATIVE(redlock_options::rl_setFencing, setFencingNative)
RL_JAVA_NATIVE(redlock_options::rl_setQuarantine, setQuarantineNative)
RL_JAVA_NATIVE(redlock_options::rl_setWake, setWakeNative)
RL_JAVA_NATIVE(redlock_options::rl_setFair, setFairNative)
RL_JAVA_NATIVE(redlock_options::rl_setEventListener, setEventListenerNative)
%javamethodmodifiers redlock_lock_options::redlock_lock_options "";
RL_JAVA_NATIVE(redlock_lock_options::rl_setWake, setWakeNative)
RL_JAVA_NATIVE(redlock_lock_options::rl_setFair, setFairNative)
RL_JAVA_NATIVE(redlock_client::rl_newElection, newElectionNative)
RL_JAVA_NATIVE(redlock_election::rl_campaign, campaignNative)
RL_JAVA_NATIVE(redlock_election::rl_proclaim, proclaimNative)
RL_JAVA_NATIVE(redlock_election::rl_resign, resignNative)
RL_JAVA_NATIVE(redlock_election::rl_cancel, cancelNative)
RL_JAVA_NATIVE(redlock_election::rl_cancelReset, resetCancelNative)
RL_JAVA_NATIVE(redlock_election::rl_isLeader, isLeaderNative)
RL_JAVA_NATIVE(redlock_election::rl_term, termNative)
RL_JAVA_NATIVE(redlock_election::rl_leaderLine, leaderLineNative)
RL_JAVA_NATIVE(redlock_election::rl_observeLine, observeLineNative)

/* Java composes these from newLock and Lock.acquire (so that close() never
 * waits for a slow acquire), and reads the node report in one call. */
%ignore redlock_client::rl_acquire;
%ignore redlock_client::rl_tryAcquire;
%ignore redlock_lock::rl_autoExtend;
%ignore redlock_lock::rl_nodeOutcome;
%ignore redlock_lock::rl_nodeCode;
%ignore redlock_lock::rl_nodeRttUs;
%ignore redlock_lock::rl_nodeMessage;

/* What Java adds: the callbacks (redlock_jni.c). */
%extend redlock_lock {
  /* dispatch: a NativeCallbacks.LostDispatch, or null. */
  void rl_autoExtendWith(rl_status *st, uint32_t maxHoldMs, jobject dispatch) {
    rl_java_auto_extend(st, $self, maxHoldMs, dispatch);
  }

  /* redlock_lock_acquire_async; dispatch: a NativeCallbacks.AcquireDispatch. */
  void rl_acquireAsyncWith(rl_status *st, uint32_t ttlMs, int64_t waitMs, jobject dispatch) {
    rl_java_acquire_async(st, $self, ttlMs, waitMs, dispatch);
  }

  /* redlock_lock_release_async; dispatch: a NativeCallbacks.RoundDispatch. */
  void rl_releaseAsyncWith(rl_status *st, jobject dispatch) {
    rl_java_round_async(st, $self, 0, 0, dispatch);
  }

  /* redlock_lock_extend_async; dispatch: a NativeCallbacks.RoundDispatch. */
  void rl_extendAsyncWith(rl_status *st, uint32_t ttlMs, jobject dispatch) {
    rl_java_round_async(st, $self, 1, ttlMs, dispatch);
  }

  /* One node of the last round's report, read at once: a NodeResult. */
  jobject rl_nodeResult(size_t i, jobject url) {
    return rl_java_node_result($self, i, url);
  }
}

%extend redlock_client {
  /* One attempt at each lock, pipelined (redlock_lock_acquire_many):
   * locks is a Lock[] without null elements, jclient the Redlock; the result
   * a RedlockException[] with null where the lock is held now. */
  jobjectArray rl_acquireMany(rl_status *st, jobjectArray locks, uint32_t ttlMs, jobject jclient) {
    return rl_java_acquire_many(st, $self, locks, ttlMs, jclient);
  }

  /* REDLOCK_ACQUIRE_MANY_MAX: Redlock.ACQUIRE_MANY_MAX reads it from here. */
  static int rl_acquireManyMax() {
    return REDLOCK_ACQUIRE_MANY_MAX;
  }

  /* A macro of redlock.h by name, so that Java's constants are read from
   * the header rather than retyped (this module leaves the macros out):
   * the waits and the unreachable bound. Java fails its class
   * initialisation on a name not listed here (INT64_MIN). */
  static int64_t rl_constant(const char *name) {
    static const struct { const char *name; int64_t value; } known[] = {
      { "REDLOCK_WAIT_DEFAULT", REDLOCK_WAIT_DEFAULT },
      { "REDLOCK_WAIT_NONE", REDLOCK_WAIT_NONE },
      { "REDLOCK_WAIT_FOREVER", REDLOCK_WAIT_FOREVER },
      { "REDLOCK_MAX_WAIT_MS", REDLOCK_MAX_WAIT_MS },
      { "REDLOCK_UNREACHABLE_NEVER", REDLOCK_UNREACHABLE_NEVER },
      { "REDLOCK_FENCE_RETENTION_MS", REDLOCK_FENCE_RETENTION_MS },
      { "REDLOCK_FENCE_SQL_UPSERT", REDLOCK_FENCE_SQL_UPSERT },
      { "REDLOCK_FENCE_SQL_UPDATE", REDLOCK_FENCE_SQL_UPDATE },
      { "REDLOCK_FENCE_SQL_READ", REDLOCK_FENCE_SQL_READ },
      { "REDLOCK_SQL_QMARK", REDLOCK_SQL_QMARK },
    };
    for (size_t k = 0; name && k < sizeof known / sizeof known[0]; k++)
      if (strcmp(known[k].name, name) == 0)
        return known[k].value;
    return INT64_MIN;
  }
}

%extend redlock_options {
  void rl_setEventListener(rl_status *st, jobject listener) {
    int rc = rl_java_set_listener($self, listener);
    if (rc != 0)
      rl_fail(st, rc, NULL);
  }
}
