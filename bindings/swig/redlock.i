/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.i: the one SWIG interface over c/include/redlock.h, shared by every
 * SWIG language (Java gets io.redlock.{Redlock,Lock,Options}; see docs/bindings.md). */

/* Java: package-private RedlockModule and RedlockModuleJNI classes, names that
 * cannot clash with Redlock on a case-insensitive file system (and that CMake's
 * UseSWIG expects). Other languages: the module "redlock". */
#ifdef SWIGJAVA
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
#include "redlock.h"

/* The outcome of one call: a negative REDLOCK_E* code and the C detail text
 * (redlock_lock_errmsg or redlock_client_open's errbuf), copied because the
 * lock it came from may be freed before the wrapper raises. */
typedef struct rl_status {
    int code;
    char *detail;
} rl_status;

/* strdup is POSIX, not C11; NULL on failure (the message then falls back
 * to redlock_strerror). */
static char *rl_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

static void rl_fail(rl_status *st, int code, const char *detail) {
    st->code = code;
    free(st->detail);
    st->detail = (detail && *detail) ? rl_strdup(detail) : NULL;
}

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

/* redlock_lock_new has no detail channel; its only EINVAL cases are these. */
#define RL_BAD_RESOURCE "the resource name is null, empty or longer than 4096 bytes"

/* Failure of a lock call: the detail travels with the handle (no thread-local
 * error in the C API). */
static void rl_lock_fail(rl_status *st, const redlock_lock *lock, int code) {
    rl_fail(st, code, redlock_lock_errmsg(lock));
}
%}

%include <stdint.i>

/* ---------------------------------------------------------------------------
 * Raising errors. Every wrapped call that can fail takes a hidden rl_status
 * (numinputs=0, so it is not part of any language's signature); after the
 * call, a non-zero code becomes the language's error. Only this block and
 * the string typemaps below differ per language.
 * ------------------------------------------------------------------------- */
#if defined(SWIGJAVA)
%{
/* One helper turns a code into an exception: io.redlock.RedlockException.fromNative
 * picks the subclass for the code. Strings cross as bytes so the C text is
 * decoded as real UTF-8, not JNI's modified UTF-8. */
static jbyteArray rl_java_bytes(JNIEnv *jenv, const char *s) {
    jsize n = s ? (jsize)strlen(s) : 0;
    jbyteArray a = (*jenv)->NewByteArray(jenv, n);
    if (a && n)
        (*jenv)->SetByteArrayRegion(jenv, a, 0, n, (const jbyte *)s);
    return a;
}

static void rl_java_throw(JNIEnv *jenv, int code, const char *detail) {
    jclass cls;
    jmethodID mid;
    jbyteArray name, text, det;
    jobject ex;

    if ((*jenv)->ExceptionCheck(jenv))
        return;
    cls = (*jenv)->FindClass(jenv, "io/redlock/RedlockException");
    if (!cls)
        return; /* NoClassDefFoundError is now pending */
    mid = (*jenv)->GetStaticMethodID(jenv, cls, "fromNative",
                                     "(I[B[B[B)Lio/redlock/RedlockException;");
    if (!mid)
        return;
    name = rl_java_bytes(jenv, redlock_error_name(code));
    text = rl_java_bytes(jenv, redlock_strerror(code));
    det = rl_java_bytes(jenv, detail ? detail : "");
    if (!name || !text || !det)
        return; /* OutOfMemoryError is pending */
    ex = (*jenv)->CallStaticObjectMethod(jenv, cls, mid, (jint)code, name, text, det);
    if (ex && !(*jenv)->ExceptionCheck(jenv))
        (*jenv)->Throw(jenv, (jthrowable)ex);
}

/* Copies a Java byte[] (a String encoded to UTF-8 on the Java side) into a
 * NUL-terminated C string. A NUL inside would silently shorten the name the
 * C library sees, so it is refused. Returns 0, or -1 with an exception set. */
static int rl_java_cstring(JNIEnv *jenv, jbyteArray in, const char *what, char **out) {
    jsize n = (*jenv)->GetArrayLength(jenv, in);
    char *s = malloc((size_t)n + 1);
    if (!s) {
        rl_java_throw(jenv, REDLOCK_ENOMEM, NULL);
        return -1;
    }
    (*jenv)->GetByteArrayRegion(jenv, in, 0, n, (jbyte *)s);
    s[n] = '\0';
    if (memchr(s, '\0', (size_t)n)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s contains a NUL character", what);
        free(s);
        rl_java_throw(jenv, REDLOCK_EINVAL, msg);
        return -1;
    }
    *out = s;
    return 0;
}
%}

%typemap(in, numinputs=0, noblock=1) rl_status *st (rl_status tmp) {
  tmp.code = 0;
  tmp.detail = NULL;
  $1 = &tmp;
}
/* No early return: the wrapper goes on to free the converted arguments and
 * returns its zero result, which Java ignores because an exception is pending. */
%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0)
    rl_java_throw(jenv, $1->code, $1->detail);
}
%typemap(freearg, noblock=1) rl_status *st { free($1->detail); }

/* A handle used after close() has a NULL pointer: an exception, not a crash. */
%typemap(in, noblock=1) struct redlock_client *self, struct redlock_lock *self,
                        struct redlock_options *self, struct redlock_lock_options *self {
  $1 = *($&1_ltype)&$input;
  if (!$1) {
    rl_java_throw(jenv, REDLOCK_ESTATE, "the handle is closed");
    return $null;
  }
}

#elif defined(SWIGTCL)
%{
/* The error result is "REDLOCK_ENAME: detail" (or the code's generic text
 * when the C library gave no detail) and errorCode is
 * {REDLOCK REDLOCK_ENAME}, so scripts can trap on the name. */
static void rl_tcl_error(Tcl_Interp *interp, int code, const char *detail) {
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: %s", redlock_error_name(code),
                                           detail && *detail ? detail : redlock_strerror(code)));
    Tcl_SetErrorCode(interp, "REDLOCK", redlock_error_name(code), NULL);
}
%}
%typemap(in, numinputs=0, noblock=1) rl_status *st (rl_status tmp) {
  tmp.code = 0;
  tmp.detail = NULL;
  $1 = &tmp;
}
%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0) {
    rl_tcl_error(interp, $1->code, $1->detail);
    free($1->detail); /* SWIG's Tcl wrappers skip freearg for numinputs=0 arguments */
    $1->detail = NULL;
    SWIG_fail;
  }
}
%typemap(freearg, noblock=1) rl_status *st { free($1->detail); }

#else
/* Any other SWIG language: the portable exception.i mapping (a RuntimeError
 * whose text starts with the error name). Add a block above to raise that
 * language's own exception classes. */
%include <exception.i>
%{
static const char *rl_message(int code, const char *detail, char *buf, size_t size) {
    snprintf(buf, size, "%s: %s", redlock_error_name(code),
             detail && *detail ? detail : redlock_strerror(code));
    return buf;
}
%}
%typemap(in, numinputs=0, noblock=1) rl_status *st (rl_status tmp) {
  tmp.code = 0;
  tmp.detail = NULL;
  $1 = &tmp;
}
%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0) {
    char rl_buf[1024];
    rl_message($1->code, $1->detail, rl_buf, sizeof rl_buf);
    free($1->detail); /* freed here: not every language runs freearg on failure */
    $1->detail = NULL;
    SWIG_exception_fail(SWIG_RuntimeError, rl_buf);
  }
}
%typemap(freearg, noblock=1) rl_status *st { free($1->detail); }
#endif

/* ---------------------------------------------------------------------------
 * Node lists: (const char *const *nodes, size_t n_nodes) from the
 * language's own sequence type. NULL elements are passed through so the C
 * library, not the binding, decides they are invalid.
 * ------------------------------------------------------------------------- */
#if defined(SWIGJAVA)
%typemap(jni)    (const char *const *nodes, size_t n_nodes) "jobjectArray"
%typemap(jtype)  (const char *const *nodes, size_t n_nodes) "byte[][]"
%typemap(jstype) (const char *const *nodes, size_t n_nodes) "String[]"
%typemap(javain) (const char *const *nodes, size_t n_nodes) "NativeSupport.utf8All($javainput)"
%typemap(in, noblock=1) (const char *const *nodes, size_t n_nodes) {
  $1 = NULL;
  $2 = 0;
  if ($input) {
    jsize rl_n = (*jenv)->GetArrayLength(jenv, $input);
    char **rl_urls = calloc(rl_n ? (size_t)rl_n : 1, sizeof(char *));
    jsize rl_i;
    if (!rl_urls) {
      rl_java_throw(jenv, REDLOCK_ENOMEM, NULL);
      return $null;
    }
    for (rl_i = 0; rl_i < rl_n; rl_i++) {
      jbyteArray rl_el = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, $input, rl_i);
      int rl_bad = rl_el && rl_java_cstring(jenv, rl_el, "a node URL", &rl_urls[rl_i]);
      if (rl_el)
        (*jenv)->DeleteLocalRef(jenv, rl_el);
      if (rl_bad) {
        while (rl_i-- > 0)
          free(rl_urls[rl_i]);
        free(rl_urls);
        return $null;
      }
    }
    $1 = ($1_ltype)rl_urls;
    $2 = (size_t)rl_n;
  }
}
%typemap(freearg, noblock=1) (const char *const *nodes, size_t n_nodes) {
  if ($1) {
    size_t rl_j;
    for (rl_j = 0; rl_j < $2; rl_j++)
      free((char *)$1[rl_j]);
    free((void *)$1);
  }
}

/* Every other string crosses as UTF-8 bytes, so a resource name gives the
 * same Redis key from Java as from C, Python or Go (JNI's own string
 * functions would use modified UTF-8). */
%typemap(jni)    const char * "jbyteArray"
%typemap(jtype)  const char * "byte[]"
%typemap(jstype) const char * "String"
%typemap(javain) const char * "NativeSupport.utf8($javainput)"
%typemap(javaout) const char * {
    return NativeSupport.string($jnicall);
  }
%typemap(in, noblock=1) const char * {
  $1 = NULL;
  if ($input && rl_java_cstring(jenv, $input, "$1_name", (char **)&$1))
    return $null;
}
%typemap(freearg, noblock=1) const char * { free((char *)$1); }
%typemap(out, noblock=1) const char * { $result = $1 ? rl_java_bytes(jenv, $1) : NULL; }

/* Java has no unsigned types: a uint32_t arrives as a long and must fit
 * rather than wrap around (-1 would become a 49-day TTL). */
%typemap(in, noblock=1) uint32_t {
  if ($input < 0 || $input > (jlong)UINT32_MAX) {
    char rl_msg[96];
    snprintf(rl_msg, sizeof rl_msg, "$1_name out of range 0..4294967295: %lld", (long long)$input);
    rl_java_throw(jenv, REDLOCK_EINVAL, rl_msg);
    return $null;
  }
  $1 = (uint32_t)$input;
}

#elif defined(SWIGTCL)
%typemap(in) (const char *const *nodes, size_t n_nodes) {
  Tcl_Obj **rl_elems;
  Tcl_Size rl_n, rl_i;
  if (Tcl_ListObjGetElements(interp, $input, &rl_n, &rl_elems) != TCL_OK)
    SWIG_fail;
  $1 = calloc(rl_n ? (size_t)rl_n : 1, sizeof(char *));
  if (!$1) {
    rl_tcl_error(interp, REDLOCK_ENOMEM, NULL);
    SWIG_fail;
  }
  for (rl_i = 0; rl_i < rl_n; rl_i++)
    ((const char **)$1)[rl_i] = Tcl_GetString(rl_elems[rl_i]); /* owned by the list */
  $2 = (size_t)rl_n;
}
%typemap(freearg) (const char *const *nodes, size_t n_nodes) { free((void *)$1); }
%{
#ifndef TCL_SIZE_MAX
typedef int Tcl_Size; /* Tcl 8.6; Tcl 9 defines it */
#endif
%}
#endif

/* ---------------------------------------------------------------------------
 * Callbacks from C into the language, and the lifetime of what they need.
 * The C library lets go of the event hook's language object itself
 * (on_event_userdata_free, once the client and its last lock are freed); a
 * lost listener is kept beside its lock's handle, and dropped once the C
 * library can no longer call it. The shared %extend code below calls these hooks:
 *   rl_open          redlock_client_open, plus the client's event hook
 *   rl_lock_free     redlock_lock_free, then drops what the lock held
 *   rl_lock_unwatch  auto-extension is over: drops the lost listener
 *   rl_options_free  drops the event listener of an Options
 * Without callbacks (every language but Java, so far) they are the plain C calls.
 * ------------------------------------------------------------------------- */
#if defined(SWIGJAVA)
%{
#include <pthread.h>

/* Set once by JNI_OnLoad. io.redlock.NativeCallbacks is looked up there,
 * with the class loader of the jar: the library's auto-extend thread,
 * attached later, could not find it with FindClass. */
static JavaVM *rl_vm;
static jclass rl_cb_class;
static jmethodID rl_cb_lost, rl_cb_event, rl_cb_sink, rl_cb_node;
static pthread_key_t rl_attached; /* set on threads this file attached */

static void rl_java_detach(void *vm) {
    (*(JavaVM *)vm)->DetachCurrentThread((JavaVM *)vm);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    jclass cls;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK)
        return JNI_ERR;
    cls = (*env)->FindClass(env, "io/redlock/NativeCallbacks");
    if (!cls || !(rl_cb_class = (jclass)(*env)->NewGlobalRef(env, cls)))
        return JNI_ERR;
    rl_cb_lost = (*env)->GetStaticMethodID(env, cls, "lost", "(Ljava/lang/Object;I[B[B[B)V");
    rl_cb_event = (*env)->GetStaticMethodID(env, cls, "event", "(Ljava/lang/Object;II[B[BIZIIIJJJIIJI)V");
    rl_cb_sink = (*env)->GetStaticMethodID(env, cls, "eventSink", "(Ljava/lang/Object;[[B)Ljava/lang/Object;");
    rl_cb_node = (*env)->GetStaticMethodID(env, cls, "nodeResult",
                                           "(ILjava/lang/Object;IIJ[B)Ljava/lang/Object;");
    if (!rl_cb_lost || !rl_cb_event || !rl_cb_sink || !rl_cb_node)
        return JNI_ERR;
    if (pthread_key_create(&rl_attached, rl_java_detach) != 0)
        return JNI_ERR;
    rl_vm = vm;
    return JNI_VERSION_1_6;
}

/* The calling thread's JNIEnv. A thread the JVM does not know is the C
 * library's auto-extend thread (or another native thread freeing the last
 * handle of a client): it is attached as a daemon (it must not keep the JVM
 * alive) once, and detached by the key's destructor when it ends. */
static JNIEnv *rl_java_env(void) {
    JNIEnv *env = NULL;
    JavaVMAttachArgs args;
    jint rc = (*rl_vm)->GetEnv(rl_vm, (void **)&env, JNI_VERSION_1_6);
    if (rc == JNI_OK)
        return env;
    if (rc != JNI_EDETACHED)
        return NULL;
    args.version = JNI_VERSION_1_6;
    args.name = (char *)"redlock-auto-extend";
    args.group = NULL;
    if ((*rl_vm)->AttachCurrentThreadAsDaemon(rl_vm, (void **)&env, &args) != JNI_OK)
        return NULL;
    pthread_setspecific(rl_attached, rl_vm);
    return env;
}

/* A JNI global reference with one holder: an Options (its listener), the C
 * library (a client's event sink) or the registry (a lock's lost listener).
 * obj may be set after the holder has it. */
typedef struct rl_jref {
    jobject obj;
} rl_jref;

static rl_jref *rl_jref_new(JNIEnv *env, jobject obj) {
    rl_jref *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (obj && !(r->obj = (*env)->NewGlobalRef(env, obj))) {
        free(r);
        return NULL;
    }
    return r;
}

/* Any thread: a native one is attached first. */
static void rl_jref_free(rl_jref *r) {
    JNIEnv *env;
    if (!r)
        return;
    if (r->obj && (env = rl_java_env()))
        (*env)->DeleteGlobalRef(env, r->obj);
    free(r);
}

/* The registry: a lock's lost listener, kept beside its handle, keyed by
 * its address. An entry is taken out before its handle is freed (so a new
 * handle at the same address never meets it) and its reference is dropped
 * after (so no callback still running can lose it). */
typedef struct rl_entry {
    struct rl_entry *next;
    const void *key;   /* a redlock_lock */
    rl_jref *lost;     /* its NativeCallbacks.LostDispatch */
} rl_entry;

static pthread_mutex_t rl_reg_mu = PTHREAD_MUTEX_INITIALIZER;

#define RL_REG_BUCKETS 1024
static rl_entry *rl_reg[RL_REG_BUCKETS];

static rl_entry **rl_reg_slot(const void *key) {
    rl_entry **p = &rl_reg[((uintptr_t)key >> 4) % RL_REG_BUCKETS];
    while (*p && (*p)->key != key)
        p = &(*p)->next;
    return p; /* *p is the entry, or NULL: where to add it */
}

/* Sets key's listener (adding the entry; NULL removes it), returning the
 * old one in *old. 0, or -1 when out of memory (nothing changed). */
static int rl_reg_set(const void *key, rl_jref *value, rl_jref **old) {
    rl_entry **p, *e;
    *old = NULL;
    pthread_mutex_lock(&rl_reg_mu);
    p = rl_reg_slot(key);
    if (!(e = *p)) {
        if (!value) {
            pthread_mutex_unlock(&rl_reg_mu);
            return 0;
        }
        if (!(e = calloc(1, sizeof *e))) {
            pthread_mutex_unlock(&rl_reg_mu);
            return -1;
        }
        e->key = key;
        *p = e;
    }
    *old = e->lost;
    e->lost = value;
    if (!e->lost) {
        *p = e->next;
        free(e);
    }
    pthread_mutex_unlock(&rl_reg_mu);
    return 0;
}

/* Takes key's entry out; NULL if it has none. */
static rl_entry *rl_reg_take(const void *key) {
    rl_entry **p, *e;
    pthread_mutex_lock(&rl_reg_mu);
    p = rl_reg_slot(key);
    if ((e = *p))
        *p = e->next;
    pthread_mutex_unlock(&rl_reg_mu);
    return e;
}

static void rl_entry_drop(rl_entry *e) {
    if (e) {
        rl_jref_free(e->lost);
        free(e);
    }
}

/* redlock_options.on_event of an Options with a Java listener. The Options
 * hold the listener itself; each client gets its own sink (rl_open), which
 * the C library frees with rl_java_sink_free. */
static void rl_java_on_event(const redlock_event *ev, void *userdata) {
    rl_jref *sink = userdata;
    JNIEnv *env;
    jbyteArray res, msg;
    if (!sink || !sink->obj || !(env = rl_java_env()))
        return;
    /* Events come from inside a wrapped C call, never with an exception
     * pending; if one is, the JVM must not be called. */
    if ((*env)->ExceptionCheck(env) || (*env)->PushLocalFrame(env, 4) != 0)
        return;
    res = rl_java_bytes(env, ev->resource);
    msg = res ? rl_java_bytes(env, ev->message) : NULL;
    if (msg)
        (*env)->CallStaticVoidMethod(env, rl_cb_class, rl_cb_event, sink->obj, (jint)ev->type, (jint)ev->code,
                                     res, msg, (jint)ev->attempt, (jboolean)(ev->automatic != 0),
                                     (jint)ev->nodes_ok, (jint)ev->quorum, (jint)ev->n_nodes,
                                     (jlong)ev->elapsed_us, (jlong)ev->validity_ms, (jlong)ev->fencing_token,
                                     (jint)ev->node, (jint)ev->node_outcome, (jlong)ev->node_rtt_us,
                                     (jint)ev->listener_state);
    /* NativeCallbacks.event catches the listener's exceptions; what is left
     * (out of memory) must not reach the C library's caller either. */
    if ((*env)->ExceptionCheck(env))
        (*env)->ExceptionClear(env);
    (*env)->PopLocalFrame(env, NULL);
}

/* redlock_lost_fn, on the client's auto-extend thread. NativeCallbacks.lost
 * only queues the listener for a Java thread (see there why). */
static void rl_java_on_lost(redlock_lock *lock, int code, const char *message, void *userdata) {
    rl_jref *dispatch = userdata;
    JNIEnv *env;
    jbyteArray name, text, det;
    (void)lock;
    if (!dispatch || !(env = rl_java_env()))
        return;
    if ((*env)->ExceptionCheck(env) || (*env)->PushLocalFrame(env, 4) != 0)
        return;
    name = rl_java_bytes(env, redlock_error_name(code));
    text = name ? rl_java_bytes(env, redlock_strerror(code)) : NULL;
    det = text ? rl_java_bytes(env, message) : NULL;
    if (det)
        (*env)->CallStaticVoidMethod(env, rl_cb_class, rl_cb_lost, dispatch->obj, (jint)code, name, text, det);
    if ((*env)->ExceptionCheck(env))
        (*env)->ExceptionClear(env);
    (*env)->PopLocalFrame(env, NULL);
}

/* on_event_userdata_free: called once by the C library, when the client and
 * its last lock are freed, on the thread that freed the last of them. */
static void rl_java_sink_free(void *sink) {
    rl_jref_free(sink);
}

/* A client whose Options carry a listener gets its own sink: the listener
 * and the client's node URLs (for NODE_ERROR events), made once the client
 * exists. The C library copies on_event_userdata, so the Options are
 * copied to hand it the sink instead of the listener, and the C library
 * frees the sink. */
static int rl_open(redlock_client **out, const char *const *nodes, size_t n_nodes,
                   const redlock_options *options, char *err, size_t errsize) {
    redlock_options copy;
    rl_jref *sink;
    const rl_jref *listener;
    JNIEnv *env;
    jclass bytes_class;
    jobjectArray urls;
    jobject obj;
    size_t i;
    int rc;

    if (!options || options->on_event != rl_java_on_event || !options->on_event_userdata)
        return redlock_client_open(out, nodes, n_nodes, options, err, errsize);
    listener = options->on_event_userdata;
    env = rl_java_env();
    if (!(sink = rl_jref_new(env, NULL)))
        return REDLOCK_ENOMEM;
    copy = *options;
    copy.on_event_userdata = sink;
    copy.on_event_userdata_free = rl_java_sink_free;
    rc = redlock_client_open(out, nodes, n_nodes, &copy, err, errsize);
    if (rc != 0) {
        rl_jref_free(sink); /* C frees it only with a client it made */
        return rc;
    }
    obj = NULL;
    if ((*env)->PushLocalFrame(env, 4) == 0) {
        bytes_class = (*env)->FindClass(env, "[B");
        urls = bytes_class ? (*env)->NewObjectArray(env, (jsize)n_nodes, bytes_class, NULL) : NULL;
        for (i = 0; urls && i < n_nodes; i++) {
            jbyteArray u = rl_java_bytes(env, redlock_client_node_url(*out, i));
            if (!u) {
                urls = NULL;
                break;
            }
            (*env)->SetObjectArrayElement(env, urls, (jsize)i, u);
            (*env)->DeleteLocalRef(env, u);
        }
        if (urls)
            obj = (*env)->CallStaticObjectMethod(env, rl_cb_class, rl_cb_sink, listener->obj, urls);
        if (obj && !(*env)->ExceptionCheck(env))
            sink->obj = (*env)->NewGlobalRef(env, obj);
        (*env)->PopLocalFrame(env, NULL);
    }
    if (!sink->obj) {
        redlock_client_free(*out); /* no lock yet: frees the sink, no event used */
        *out = NULL;
        return REDLOCK_ENOMEM; /* an exception already pending (OutOfMemoryError) wins */
    }
    return 0;
}

static void rl_lock_free(redlock_lock *l) {
    rl_entry *e = rl_reg_take(l);
    redlock_lock_free(l); /* stops auto-extension, waiting for a callback under way */
    rl_entry_drop(e);
}

/* After redlock_release or redlock_lock_auto_extend_stop, which wait for a
 * lost callback under way: the lost listener can no longer be called. */
static void rl_lock_unwatch(redlock_lock *l) {
    rl_jref *old;
    if (rl_reg_set(l, NULL, &old) == 0)
        rl_jref_free(old);
}

/* Lock.autoExtend: dispatch is a NativeCallbacks.LostDispatch, or null. */
static void rl_java_auto_extend(rl_status *st, redlock_lock *l, uint32_t max_hold_ms, jobject dispatch) {
    rl_jref *ref = NULL, *old = NULL;
    int rc;
    if (dispatch && !(ref = rl_jref_new(rl_java_env(), dispatch))) {
        rl_fail(st, REDLOCK_ENOMEM, NULL);
        return;
    }
    /* A listener from an earlier call may be running: stop (which waits for
     * it) before letting it go. Starting again below replaces the old
     * auto-extension with the same schedule. */
    pthread_mutex_lock(&rl_reg_mu);
    {
        rl_entry *e = *rl_reg_slot(l);
        old = e ? e->lost : NULL;
    }
    pthread_mutex_unlock(&rl_reg_mu);
    if (old) {
        redlock_lock_auto_extend_stop(l);
        rl_lock_unwatch(l);
    }
    if (ref && rl_reg_set(l, ref, &old) != 0) {
        rl_jref_free(ref);
        rl_fail(st, REDLOCK_ENOMEM, NULL);
        return;
    }
    rl_jref_free(old); /* NULL: let go above */
    rc = redlock_lock_auto_extend(l, max_hold_ms, ref ? rl_java_on_lost : NULL, ref);
    if (rc != 0) {
        rl_lock_fail(st, l, rc);
        if (ref)
            rl_lock_unwatch(l); /* not started: nothing can call it */
    }
}

/* Options.setEventListener: the Options hold the listener (NULL unsets). */
static int rl_java_set_listener(redlock_options *o, jobject listener) {
    rl_jref *ref = NULL;
    if (listener && !(ref = rl_jref_new(rl_java_env(), listener)))
        return REDLOCK_ENOMEM;
    if (o->on_event == rl_java_on_event)
        rl_jref_free(o->on_event_userdata);
    o->on_event = ref ? rl_java_on_event : NULL;
    o->on_event_userdata = ref;
    return 0;
}

static void rl_options_free(redlock_options *o) {
    if (o->on_event == rl_java_on_event)
        rl_jref_free(o->on_event_userdata);
}

/* Redlock.listenerMessage: why node i's wake-up listener is down or refused. */
static jbyteArray rl_java_listener_message(const redlock_client *c, size_t i) {
    char msg[512] = "";
    redlock_client_listener_state(c, i, msg, sizeof msg);
    return rl_java_bytes(rl_java_env(), msg);
}

/* Lock.nodeResults, one node: a NodeResult built by NativeCallbacks. */
static jobject rl_java_node_result(const redlock_lock *l, size_t i, jobject url) {
    char msg[512];
    int code = 0;
    int64_t rtt = 0;
    JNIEnv *env = rl_java_env();
    jbyteArray m;
    int outcome = redlock_lock_node_result(l, i, &code, &rtt, msg, sizeof msg);
    if (outcome < 0) {
        rl_java_throw(env, outcome, "node index out of range");
        return NULL;
    }
    if (!(m = rl_java_bytes(env, msg)))
        return NULL;
    return (*env)->CallStaticObjectMethod(env, rl_cb_class, rl_cb_node, (jint)i, url, (jint)outcome, (jint)code,
                                          (jlong)rtt, m);
}
%}
#else
%{
/* No callbacks: the hooks are the C calls themselves. */
static int rl_open(redlock_client **out, const char *const *nodes, size_t n_nodes,
                   const redlock_options *options, char *err, size_t errsize) {
    return redlock_client_open(out, nodes, n_nodes, options, err, errsize);
}
#define rl_lock_free(l) redlock_lock_free(l)
#define rl_lock_unwatch(l) ((void)(l))
#define rl_options_free(o) ((void)(o))
%}
#endif

/* ---------------------------------------------------------------------------
 * Java class shape: AutoCloseable handles whose memory is freed by close()
 * or, if the program forgets, by a java.lang.ref.Cleaner (memory only, never
 * network I/O, like redlock_lock_free itself). No finalize().
 * ------------------------------------------------------------------------- */
#ifdef SWIGJAVA
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeSupport.loadLibrary();
  }
%}

%define RL_JAVA_HANDLE(CTYPE, JNAME)
%typemap(javabody) CTYPE %{
  private transient volatile long swigCPtr;
  private final transient NativeSupport.Handle swigHandle;

  $javaclassname(long cPtr, boolean cMemoryOwn) {
    swigCPtr = cPtr;
    swigHandle = cMemoryOwn ? NativeSupport.own(this, cPtr, $imclassname::delete_##JNAME) : null;
  }

  static long getCPtr($javaclassname obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }

  /* Frees the C object now (at most once) and leaves a closed handle behind. */
  final void swigFree() {
    swigCPtr = 0;
    if (swigHandle != null)
      swigHandle.free();
  }
%}
%typemap(javafinalize) CTYPE ""
%typemap(javadestruct, methodname="swigDelete", methodmodifiers="private", parameters="") CTYPE {
    swigFree();
  }
%enddef

RL_JAVA_HANDLE(struct redlock_client, Redlock)
RL_JAVA_HANDLE(struct redlock_lock, Lock)
RL_JAVA_HANDLE(struct redlock_options, Options)
RL_JAVA_HANDLE(struct redlock_lock_options, LockOptions)

%typemap(javainterfaces) struct redlock_client, struct redlock_lock "AutoCloseable"
%typemap(javaclassmodifiers) struct redlock_client, struct redlock_lock, struct redlock_options,
                              struct redlock_lock_options "public final class"

%typemap(javaimports) struct redlock_client %{
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A Redlock client over N independent Redis/Valkey nodes. Thread-safe.
 *
 * <pre>{@code
 * try (Redlock client = new Redlock(new String[]{"redis://a:6379", "redis://b:6379", "redis://c:6379"});
 *      Lock lock = client.acquire("invoices", 30_000)) {
 *     ...
 * }
 * }</pre>
 *
 * Locks keep the underlying C client alive, so a {@link Lock} stays usable
 * after its client is closed. Every failure is a {@link RedlockException}.
 */%}
%typemap(javaimports) struct redlock_lock %{
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One lock on one resource. Use it from one thread at a time (its methods
 * are synchronized), except {@link #cancel()}, which any thread may call.
 * {@link #close()} releases the lock if it is held and frees the handle.
 * The client's auto-extend thread may extend it meanwhile
 * ({@link #autoExtend(long, LockLostListener)}).
 */%}
%typemap(javaimports) struct redlock_lock_options %{
/**
 * One lock's acquisition policy (redlock_lock_options): retries, their delay
 * and jitter, the default wait, the clock-drift allowance, and how it waits
 * (wake-up by a release, fair mode). Read a lock's
 * with {@link Lock#getOptions()} (its client's options until changed), change
 * fields, and give it back with {@link Lock#setOptions(LockOptions)} or
 * {@link Redlock#newLock(String, LockOptions)}: locks with different
 * policies share their client's connections. {@code new LockOptions()} holds
 * the C library's defaults. Times are in milliseconds; values must fit
 * 0..2^32-1. Not thread-safe.
 */%}
%typemap(javaimports) struct redlock_options %{
/**
 * Client options, initialised to the C library's defaults
 * (redlock_options_init). Times are in milliseconds; values must fit 0..2^32-1.
 */%}

%typemap(javacode) struct redlock_client %{
  /** wait argument: the client's retry policy (Options retryCount / waitMs); REDLOCK_WAIT_DEFAULT. */
  public static final long WAIT_DEFAULT = -1;
  /** wait argument: exactly one attempt; REDLOCK_WAIT_NONE. */
  public static final long WAIT_NONE = 0;

  /** A client with the default options. */
  public Redlock(String[] nodes) {
    this(nodes, null);
  }

  /** Acquires resource for ttlMs, retrying per the client's options. */
  public Lock acquire(String resource, long ttlMs) {
    return acquire(resource, ttlMs, WAIT_DEFAULT);
  }

  /** Acquires resource for ttlMs with one attempt. */
  public Lock tryAcquire(String resource, long ttlMs) {
    return acquire(resource, ttlMs, WAIT_NONE);
  }

  /**
   * Acquires resource for ttlMs, retrying for up to waitMs (or WAIT_DEFAULT,
   * WAIT_NONE); a wait that runs out throws {@link LockTimeoutException}.
   */
  public Lock acquire(String resource, long ttlMs, long waitMs) {
    // The lock handle is made under this client's monitor and the wait runs
    // outside it, so close() never waits for a slow acquire.
    Lock lock = newLock(resource);
    try {
      lock.acquire(ttlMs, waitMs);
      return lock;
    } catch (RuntimeException | Error e) {
      lock.swigFree(); // not held, so nothing to release
      throw e;
    }
  }

  /** Frees the client. Idempotent. Locks made from it remain usable. */
  @Override
  public synchronized void close() {
    swigFree();
  }

  private List<String> swigNodeUrls;

  /**
   * The node URLs as given to the constructor, with any password masked, in
   * the order that {@link Lock#nodeResults()} and {@link RedlockEvent#node()} use.
   */
  public synchronized List<String> nodeUrls() {
    long n = nodeCount(); // throws once closed
    if (swigNodeUrls == null) {
      List<String> urls = new ArrayList<>((int) n);
      for (long i = 0; i < n; i++)
        urls.add(nodeUrlNative(i));
      swigNodeUrls = Collections.unmodifiableList(urls);
    }
    return swigNodeUrls;
  }

  /**
   * The state of this client's wake-up listener on node i (an index into
   * {@link #nodeUrls()}): the connection on which it hears releases, opened
   * by its first waiting acquire (see {@link Options#setWake(boolean)}).
   * Throws InvalidArgumentException for i out of range.
   */
  public synchronized ListenerState listenerState(int i) {
    return ListenerState.fromNative(listenerStateNative(i));
  }

  /** Why node i's wake-up listener is DOWN or REFUSED; "" otherwise. */
  public synchronized String listenerMessage(int i) {
    listenerStateNative(i); // the range and closed checks
    return NativeSupport.string(listenerMessageNative(i));
  }

  /** {@link #listenerState(int)} of every node, in the order of {@link #nodeUrls()}. */
  public synchronized List<ListenerState> listenerStates() {
    int n = (int) nodeCount();
    List<ListenerState> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++)
      out.add(listenerState(i));
    return Collections.unmodifiableList(out);
  }

  /** A handle for resource, not yet acquired (for acquire/cancel from Lock). */
  public Lock newLock(String resource) {
    List<String> urls = nodeUrls();
    Lock lock = newLockNative(resource);
    lock.swigNodeUrls = urls;
    return lock;
  }

  /**
   * A handle for resource, not yet acquired, with its own acquisition policy
   * (retries, wait, drift: {@link Lock#setOptions(LockOptions)}) instead of
   * this client's. It uses this client's connections, however many locks
   * have a policy of their own. Invalid options throw InvalidArgumentException.
   */
  public Lock newLock(String resource, LockOptions options) {
    Lock lock = newLock(resource);
    try {
      lock.setOptions(options);
      return lock;
    } catch (RuntimeException | Error e) {
      lock.swigFree();
      throw e;
    }
  }
%}

%typemap(javacode) struct redlock_lock %{
  // cancel() must not run while the handle is being freed; it cannot take
  // the lock's monitor because acquire() holds that while it waits.
  private final Object swigCancelGuard = new Object();

  /** Acquires for ttlMs, retrying per the client's options. */
  public void acquire(long ttlMs) {
    acquire(ttlMs, Redlock.WAIT_DEFAULT);
  }

  /** Acquires for ttlMs with one attempt. */
  public void tryAcquire(long ttlMs) {
    acquire(ttlMs, Redlock.WAIT_NONE);
  }

  /**
   * Makes an acquire() waiting in another thread throw
   * {@link CancelledException} promptly, and every later acquire() too,
   * until {@link #resetCancel()}: a cancel issued just before the wait
   * starts is therefore never lost. Safe to call from any thread, and after
   * close() (then it does nothing).
   */
  public void cancel() {
    synchronized (swigCancelGuard) {
      if (swigCPtr != 0)
        cancelNative();
    }
  }

  // The client's node URLs, for nodeResults(); set by Redlock.newLock.
  List<String> swigNodeUrls = List.of();

  /** {@link #autoExtend(long, LockLostListener)} for up to an hour, with no listener. */
  public void autoExtend() {
    autoExtend(0, null);
  }

  /** {@link #autoExtend(long, LockLostListener)} for up to an hour. */
  public void autoExtend(LockLostListener listener) {
    autoExtend(0, listener);
  }

  /**
   * Keeps the held lock alive: the client's background thread extends it to
   * its acquisition TTL every TTL/3 until {@link #release()}, {@link #close()},
   * {@link #stopAutoExtend()}, a loss, or maxHoldMs of holding in all (0 = one
   * hour; the Options' maxHoldMs and maxExtensions apply too). A loss makes
   * {@link #isHeld()} false and is told to listener (may be null) on another
   * thread; see {@link LockLostListener}. Calling it again replaces the
   * listener. Throws {@link LockStateException} when the lock is not held.
   */
  public synchronized void autoExtend(long maxHoldMs, LockLostListener listener) {
    autoExtendNative(maxHoldMs, listener == null ? null : new NativeCallbacks.LostDispatch(this, listener));
  }

  /**
   * What each node did in this lock's last round (the last attempt of an
   * acquire, an extension by anyone, or a release), in the client's node order.
   */
  public synchronized List<NodeResult> nodeResults() {
    List<String> urls = swigNodeUrls;
    List<NodeResult> out = new ArrayList<>(urls.size());
    for (int i = 0; i < urls.size(); i++)
      out.add((NodeResult) nodeResultNative(i, urls.get(i)));
    return Collections.unmodifiableList(out);
  }

  /** Clears a {@link #cancel()}, so that this lock can be acquired again. */
  public void resetCancel() {
    synchronized (swigCancelGuard) {
      if (swigCPtr != 0)
        resetCancelNative();
    }
  }

  /**
   * Releases the lock if this handle holds it (throwing
   * {@link LockLostException} if it was no longer ours on a majority), then
   * frees the handle. Idempotent. In try-with-resources an exception from
   * the body wins and this one is added to it as suppressed.
   */
  @Override
  public synchronized void close() {
    synchronized (swigCancelGuard) {
      if (swigCPtr == 0)
        return;
      try {
        closeNative(); // releases if held, frees the C handle even on failure
      } finally {
        swigCPtr = 0;
        if (swigHandle != null)
          swigHandle.forget(); // closeNative already freed it
      }
    }
  }
%}

%typemap(javacode) struct redlock_options %{
  private RedlockEventListener swigEventListener;

  /**
   * The metrics hook: listener (null unsets) is told about every acquire
   * attempt, extension, loss, release and node failure of the locks of the
   * clients created from these options afterwards. See {@link RedlockEventListener}
   * for the thread it runs on and what it must not do.
   */
  public void setEventListener(RedlockEventListener listener) {
    setEventListenerNative(listener);
    swigEventListener = listener;
  }

  public RedlockEventListener getEventListener() {
    return swigEventListener;
  }

  /** Frees the options now rather than when collected. Idempotent. */
  public synchronized void free() {
    swigEventListener = null;
    swigFree();
  }

  // Freed options must not silently mean "the defaults" (a NULL pointer).
  static long getCPtrChecked(Options obj) {
    if (obj == null)
      return 0;
    long p = obj.swigCPtr;
    if (p == 0)
      throw new LockStateException("REDLOCK_ESTATE", "the handle is closed", "these Options were freed");
    return p;
  }
%}
%typemap(javain) const redlock_options *options "Options.getCPtrChecked($javainput)"

%typemap(javacode) struct redlock_lock_options %{
  /** Frees the options now rather than when collected. Idempotent. */
  public synchronized void free() {
    swigFree();
  }

  @Override
  public String toString() {
    return "LockOptions[retryCount=" + getRetryCount() + ", retryDelayMs=" + getRetryDelayMs()
        + ", retryJitterMs=" + getRetryJitterMs() + ", waitMs=" + getWaitMs()
        + ", driftFactor=" + getDriftFactor() + ", driftMinMs=" + getDriftMinMs()
        + ", wake=" + getWake() + ", fair=" + getFair() + "]";
  }

  // Freed options must not silently mean "none" (a NULL pointer, EINVAL).
  static long getCPtrChecked(LockOptions obj) {
    if (obj == null)
      return 0;
    long p = obj.swigCPtr;
    if (p == 0)
      throw new LockStateException("REDLOCK_ESTATE", "the handle is closed", "these LockOptions were freed");
    return p;
  }
%}
%typemap(javain) const redlock_lock_options *opts "LockOptions.getCPtrChecked($javainput)"

/* Calls that use a lock handle are serialised on it (the C handle is for one
 * thread at a time); client calls that touch the C client are serialised
 * with close(). */
%javamethodmodifiers redlock_client::redlock_client "
  /**
   * A client over the given node URLs (redis://[user[:password]@]host[:port][/db]
   * or unix:///path[?db=N]) with options (null = the defaults). No connection is
   * made yet. A malformed or duplicate URL throws InvalidArgumentException; a
   * TLS file that cannot be loaded, TLSException.
   */
  public";
%javamethodmodifiers redlock_client::rl_newLock "private synchronized";
%rename(newLockNative) redlock_client::rl_newLock;
%javamethodmodifiers redlock_client::rl_nodeUrl "private synchronized";
%rename(nodeUrlNative) redlock_client::rl_nodeUrl;
%javamethodmodifiers redlock_client::rl_listenerStateNative "private";
%javamethodmodifiers redlock_client::rl_listenerMessageNative "private";
%javamethodmodifiers redlock_client::rl_nodeCount "
  /** How many nodes this client uses. */
  public synchronized";
%javamethodmodifiers redlock_client::rl_loadFunctions "
  /**
   * Loads (FUNCTION LOAD REPLACE) the \"redlock\" function library on every node, for
   * clients whose Options have setUseFunctions(true). An administrator runs it once
   * per node, with URLs whose user may run FUNCTION LOAD. Throws the commonest
   * failure, with every node's answer, if any node did not load it.
   */
  public synchronized";
%javamethodmodifiers redlock_client::rl_version "
  /** The version of the C library actually loaded, \"MAJOR.MINOR.PATCH\". */
  public";
%javamethodmodifiers redlock_lock::rl_acquire "
  /** Acquires for ttlMs, waiting up to waitMs (Redlock.WAIT_DEFAULT, Redlock.WAIT_NONE or {@code > 0}). */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_extend "
  /** Extends the held lock to ttlMs from now, on a majority and within its validity. */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_release "
  /** Releases on every node; throws LockLostException if it was no longer ours on a majority. */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_validityMs "
  /** Remaining validity in ms (monotonic clock); {@code <= 0} means expired or not held. */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_isHeld "
  /** Whether this handle holds the lock and its validity has not run out. */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_resource "
  /** The resource name this lock is for. */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_fencingToken "
  /**
   * The fencing token of the current acquisition ({@code >= 1}) when the client's
   * Options have setFencing(true); 0 when not held or without fencing. Successive
   * holders' tokens strictly increase (docs/fencing.md).
   */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_getOptions "
  /**
   * This lock's acquisition policy (a copy): its client's options until
   * {@link #setOptions(LockOptions)} changed them.
   */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_setOptions "
  /**
   * Sets this lock's acquisition policy for its next acquisitions (retries,
   * delay, jitter, the wait of acquire(ttlMs) and acquire(ttlMs, WAIT_DEFAULT))
   * and the drift allowance of its validity; the options are copied. Checked
   * as the client's options are: InvalidArgumentException, with the reason,
   * leaves the policy unchanged. Waits for an acquire under way on this handle.
   */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_stopAutoExtend "
  /**
   * Stops auto-extension, waiting for an extension under way; the lock stays
   * held until its validity runs out. False if it was not on (never started,
   * or ended by a loss or a release).
   */
  public synchronized";
%javamethodmodifiers redlock_lock::rl_autoExtendNative "private";
%javamethodmodifiers redlock_lock::rl_nodeResultNative "private";
%javamethodmodifiers redlock_options::rl_setFencing "
  /** Every acquisition mints a fencing token (REDLOCK_OPT_FENCING; {@link Lock#fencingToken()}); one more round trip per acquisition. */
  public";
%javamethodmodifiers redlock_options::rl_setWake "
  /**
   * Whether a waiting acquire is woken by the holder's release (true, the
   * default) or only polls with the retry delay and jitter (false:
   * REDLOCK_OPT_NO_WAKE). Woken waits listen on one more connection per node
   * ({@link Redlock#listenerStates()}); where a node's listener is down or
   * refused (an ACL without the channel &amp;redlock:wake:*), they poll. Releases
   * wake other clients' waiters either way. The default of the client's locks
   * ({@link LockOptions#setWake(boolean)}).
   */
  public";
%javamethodmodifiers redlock_options::rl_setFair "
  /**
   * Fair mode (REDLOCK_OPT_FAIR): a lock that becomes free goes to the waiter
   * that has waited longest, as Redisson's getFairLock does. It holds only when
   * every contender of a resource uses it. The default of the client's locks
   * ({@link LockOptions#setFair(boolean)}).
   */
  public";
%javamethodmodifiers redlock_lock_options::rl_setWake "
  /** This lock's {@link Options#setWake(boolean)}: woken by a release (true) or polling only. */
  public";
%javamethodmodifiers redlock_lock_options::rl_setFair "
  /** This lock's {@link Options#setFair(boolean)}: waiters served in arrival order. */
  public";
%javamethodmodifiers redlock_options::rl_setEventListenerNative "private";
%javamethodmodifiers redlock_lock::rl_cancel "private";
%javamethodmodifiers redlock_lock::rl_close "private";
%rename(cancelNative) redlock_lock::rl_cancel;
%javamethodmodifiers redlock_lock::rl_cancelReset "private";
%rename(resetCancelNative) redlock_lock::rl_cancelReset;
%rename(closeNative) redlock_lock::rl_close;
#endif

/* ---------------------------------------------------------------------------
 * What the target languages see from redlock.h: only the options struct
 * (fields in lowerCamelCase) and, outside Java, the constants. The free
 * functions are reached through the classes below.
 * ------------------------------------------------------------------------- */
%rename("$ignore", %$isfunction, %$not %$ismember) "";
%rename("%(lowercamelcase)s", %$ismember, %$isvariable) "";
#ifdef SWIGJAVA
/* Java gets named constants on its classes instead (Redlock.WAIT_DEFAULT). */
%rename("$ignore", %$isconstant) "";
%rename("$ignore", %$isenum) "";
%rename("$ignore", %$isenumitem) "";
#endif
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

%rename(Redlock) redlock_client;
%rename(Lock) redlock_lock;
%rename(Options) redlock_options;
%rename(LockOptions) redlock_lock_options;
/* Generated helper functions are named struct_method (redlock_lock_acquire
 * would clash with the C API), so methods are declared with an rl_ prefix
 * that the target languages never see. */
%rename("%(strip:[rl_])s", %$ismember, %$isfunction) "";
%nodefaultctor redlock_client;
%nodefaultctor redlock_lock;
%nodefaultctor redlock_options;
%nodefaultctor redlock_lock_options;

%include "redlock.h"

/* SWIG needs a struct body to hang methods on; the C compiler never sees
 * these empty bodies (the handles stay opaque). */
struct redlock_client {};
struct redlock_lock {};

/* ---------------------------------------------------------------------------
 * The classes. Each method is one C call; retries, quorum and validity are
 * all decided in libredlock.
 * ------------------------------------------------------------------------- */
%newobject redlock_client::rl_newLock;
%newobject redlock_lock::rl_getOptions;
#ifndef SWIGJAVA
%newobject redlock_lock::rl_nodeMessage;
%newobject redlock_client::rl_listenerMessage;
%newobject redlock_client::rl_acquire;
%newobject redlock_client::rl_tryAcquire;
#endif
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
    int rc = redlock_lock_new(&l, $self, resource);
    if (rc != 0) {
      rl_fail(st, rc, rc == REDLOCK_EINVAL ? RL_BAD_RESOURCE : NULL);
      return NULL;
    }
    return l;
  }

#ifndef SWIGJAVA
  /* In Java these are composed from newLock + Lock.acquire so that close()
   * never waits for a slow acquire; elsewhere the C helper does it. */
  redlock_lock *rl_acquire(rl_status *st, const char *resource, uint32_t ttlMs, int64_t waitMs) {
    redlock_lock *l = NULL;
    int rc = redlock_lock_new(&l, $self, resource);
    if (rc != 0) {
      rl_fail(st, rc, rc == REDLOCK_EINVAL ? RL_BAD_RESOURCE : NULL);
      return NULL;
    }
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
#endif

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
#ifdef SWIGJAVA
  int rl_listenerStateNative(rl_status *st, size_t i) {
#else
  int rl_listenerState(rl_status *st, size_t i) {
#endif
    int state = redlock_client_listener_state($self, i, NULL, 0);
    if (state < 0)
      rl_fail(st, state, "node index out of range");
    return state;
  }

#ifdef SWIGJAVA
  jbyteArray rl_listenerMessageNative(size_t i) {
    return rl_java_listener_message($self, i);
  }
#else
  /* Why it is down or refused; "" otherwise. */
  char *rl_listenerMessage(size_t i) {
    char *buf = calloc(1, 512); /* freed by the wrapper (%newobject) */
    if (buf)
      redlock_client_listener_state($self, i, buf, 512);
    return buf;
  }
#endif

  static const char *rl_version() {
    return redlock_version();
  }
}

%extend redlock_lock {
  ~redlock_lock() {
    rl_lock_free($self);
  }

  void rl_acquire(rl_status *st, uint32_t ttlMs, int64_t waitMs) {
    int rc = redlock_lock_acquire($self, ttlMs, waitMs);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  void rl_extend(rl_status *st, uint32_t ttlMs) {
    int rc = redlock_extend($self, ttlMs);
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  void rl_release(rl_status *st) {
    int rc = redlock_release($self);
    rl_lock_unwatch($self); /* the release stopped auto-extension */
    if (rc != 0)
      rl_lock_fail(st, $self, rc);
  }

  /* Releases unless the C library says there is nothing to release
   * (REDLOCK_ESTATE: never acquired, or already released), then frees the
   * handle whatever the outcome. An expired or lost lock is still released,
   * so close() reports REDLOCK_ELOST for it, as redlock_release does. */
  void rl_close(rl_status *st) {
    int rc = redlock_release($self);
    if (rc != 0 && rc != REDLOCK_ESTATE)
      rl_lock_fail(st, $self, rc);
    rl_lock_free($self);
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

  const char *rl_resource() {
    return redlock_lock_resource($self);
  }

  /* The bits of the unsigned token: counters start at 0 and grow by one per
   * acquisition, so a signed 64 bits holds them unless a counter key was
   * set near 2^63 by hand. */
  int64_t rl_fencingToken() {
    return (int64_t)redlock_lock_fencing_token($self);
  }

#ifdef SWIGJAVA
  void rl_autoExtendNative(rl_status *st, uint32_t maxHoldMs, jobject dispatch) {
    rl_java_auto_extend(st, $self, maxHoldMs, dispatch);
  }

  jobject rl_nodeResultNative(size_t i, jobject url) {
    return rl_java_node_result($self, i, url);
  }
#else
  /* Without a lost callback here: is_held tells of a loss. */
  void rl_autoExtend(rl_status *st, uint32_t maxHoldMs) {
    int rc = redlock_lock_auto_extend($self, maxHoldMs, NULL, NULL);
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
    char *buf = calloc(1, 512); /* freed by the wrapper (%newobject) */
    if (buf)
      redlock_lock_node_result($self, i, NULL, NULL, buf, 512);
    return buf;
  }
#endif

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
    rl_lock_unwatch($self);
    return rc == 0;
  }
}

%extend redlock_lock_options {
  /* The C library's defaults, those of redlock_options_init. */
  redlock_lock_options(rl_status *st) {
    redlock_lock_options *o = malloc(sizeof *o);
    redlock_options d;
    if (!o) {
      rl_fail(st, REDLOCK_ENOMEM, NULL);
      return NULL;
    }
    redlock_options_init(&d);
    o->version = REDLOCK_LOCK_OPTIONS_VERSION;
    o->retry_count = d.retry_count;
    o->retry_delay_ms = d.retry_delay_ms;
    o->retry_jitter_ms = d.retry_jitter_ms;
    o->wait_ms = d.wait_ms;
    o->drift_factor = d.drift_factor;
    o->drift_min_ms = d.drift_min_ms;
    o->flags = d.flags & (REDLOCK_OPT_NO_WAKE | REDLOCK_OPT_FAIR);
    return o;
  }

  ~redlock_lock_options() {
    free($self);
  }

  void rl_setWake(bool wake) {
    if (wake)
      $self->flags &= ~(uint32_t)REDLOCK_OPT_NO_WAKE;
    else
      $self->flags |= REDLOCK_OPT_NO_WAKE;
  }
  bool rl_getWake() { return ($self->flags & REDLOCK_OPT_NO_WAKE) == 0; }

  void rl_setFair(bool fair) {
    if (fair)
      $self->flags |= REDLOCK_OPT_FAIR;
    else
      $self->flags &= ~(uint32_t)REDLOCK_OPT_FAIR;
  }
  bool rl_getFair() { return ($self->flags & REDLOCK_OPT_FAIR) != 0; }
}

%extend redlock_options {
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
  void rl_setKeyPrefix(rl_status *st, const char *prefix) {
    char *copy = NULL;
    if (prefix && !(copy = rl_strdup(prefix))) {
      rl_fail(st, REDLOCK_ENOMEM, NULL);
      return;
    }
    free((char *)$self->key_prefix);
    $self->key_prefix = copy;
  }

  const char *rl_getKeyPrefix() {
    return $self->key_prefix;
  }

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
  void rl_setUseFunctions(bool use) {
    if (use)
      $self->flags |= REDLOCK_OPT_FUNCTIONS;
    else
      $self->flags &= ~(uint32_t)REDLOCK_OPT_FUNCTIONS;
  }
  bool rl_getUseFunctions() { return ($self->flags & REDLOCK_OPT_FUNCTIONS) != 0; }

  /* REDLOCK_OPT_FENCING: every acquisition mints a fencing token (docs/fencing.md). */
  void rl_setFencing(bool fencing) {
    if (fencing)
      $self->flags |= REDLOCK_OPT_FENCING;
    else
      $self->flags &= ~(uint32_t)REDLOCK_OPT_FENCING;
  }
  bool rl_getFencing() { return ($self->flags & REDLOCK_OPT_FENCING) != 0; }

  /* REDLOCK_OPT_NO_WAKE, as a positive: true (the default) wakes waiting acquires on a release. */
  void rl_setWake(bool wake) {
    if (wake)
      $self->flags &= ~(uint32_t)REDLOCK_OPT_NO_WAKE;
    else
      $self->flags |= REDLOCK_OPT_NO_WAKE;
  }
  bool rl_getWake() { return ($self->flags & REDLOCK_OPT_NO_WAKE) == 0; }

  /* REDLOCK_OPT_FAIR: a free lock goes to the waiter that has waited longest. */
  void rl_setFair(bool fair) {
    if (fair)
      $self->flags |= REDLOCK_OPT_FAIR;
    else
      $self->flags &= ~(uint32_t)REDLOCK_OPT_FAIR;
  }
  bool rl_getFair() { return ($self->flags & REDLOCK_OPT_FAIR) != 0; }

#ifdef SWIGJAVA
  void rl_setEventListenerNative(rl_status *st, jobject listener) {
    int rc = rl_java_set_listener($self, listener);
    if (rc != 0)
      rl_fail(st, rc, NULL);
  }
#endif
}
