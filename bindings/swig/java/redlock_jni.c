/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_jni.c: the JNI the Java binding writes by hand: strings and
 * exceptions across the boundary, and the callbacks from C into Java (the
 * lost-lock listener, the event hook, the node report) with the lifetime of
 * the Java objects they need. SWIG generates the rest from redlock_java.i. */
#include "redlock_jni.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Strings and exceptions
 * ------------------------------------------------------------------------- */

/* Strings cross as bytes so the C text is decoded as real UTF-8, not JNI's
 * modified UTF-8. */
jbyteArray rl_java_bytes(JNIEnv *env, const char *s) {
    jsize n = s ? (jsize)strlen(s) : 0;
    jbyteArray a = (*env)->NewByteArray(env, n);
    if (a && n)
        (*env)->SetByteArrayRegion(env, a, 0, n, (const jbyte *)s);
    return a;
}

/* io.redlock.RedlockException.fromNative picks the subclass for the code. */
void rl_java_throw(JNIEnv *env, int code, const char *detail) {
    jclass cls;
    jmethodID mid;
    jbyteArray name, text, det;
    jobject ex;

    if ((*env)->ExceptionCheck(env))
        return;
    cls = (*env)->FindClass(env, "io/redlock/RedlockException");
    if (!cls)
        return; /* NoClassDefFoundError is now pending */
    mid = (*env)->GetStaticMethodID(env, cls, "fromNative", "(I[B[B[B)Lio/redlock/RedlockException;");
    if (!mid)
        return;
    name = rl_java_bytes(env, redlock_error_name(code));
    text = rl_java_bytes(env, redlock_strerror(code));
    det = rl_java_bytes(env, detail ? detail : "");
    if (!name || !text || !det)
        return; /* OutOfMemoryError is pending */
    ex = (*env)->CallStaticObjectMethod(env, cls, mid, (jint)code, name, text, det);
    if (ex && !(*env)->ExceptionCheck(env))
        (*env)->Throw(env, (jthrowable)ex);
}

/* A NUL inside would silently shorten the name the C library sees, so it is
 * refused. */
int rl_java_cstring(JNIEnv *env, jbyteArray in, const char *what, char **out) {
    jsize n = (*env)->GetArrayLength(env, in);
    char *s = malloc((size_t)n + 1);
    if (!s) {
        rl_java_throw(env, REDLOCK_ENOMEM, NULL);
        return -1;
    }
    (*env)->GetByteArrayRegion(env, in, 0, n, (jbyte *)s);
    s[n] = '\0';
    if (memchr(s, '\0', (size_t)n)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s contains a NUL character", what);
        free(s);
        rl_java_throw(env, REDLOCK_EINVAL, msg);
        return -1;
    }
    *out = s;
    return 0;
}

int rl_java_node_list(JNIEnv *env, jobjectArray in, char ***out, size_t *n) {
    jsize len = (*env)->GetArrayLength(env, in);
    char **urls = calloc(len ? (size_t)len : 1, sizeof(char *));
    jsize i;
    if (!urls) {
        rl_java_throw(env, REDLOCK_ENOMEM, NULL);
        return -1;
    }
    for (i = 0; i < len; i++) {
        jbyteArray el = (jbyteArray)(*env)->GetObjectArrayElement(env, in, i);
        int bad = el && rl_java_cstring(env, el, "a node URL", &urls[i]);
        if (el)
            (*env)->DeleteLocalRef(env, el);
        if (bad) {
            rl_java_free_list(urls, (size_t)i);
            return -1;
        }
    }
    *out = urls;
    *n = (size_t)len;
    return 0;
}

void rl_java_free_list(char **list, size_t n) {
    size_t i;
    if (!list)
        return;
    for (i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

int rl_java_uint32(JNIEnv *env, jlong in, const char *what, uint32_t *out) {
    if (in < 0 || in > (jlong)UINT32_MAX) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s out of range 0..4294967295: %lld", what, (long long)in);
        rl_java_throw(env, REDLOCK_EINVAL, msg);
        return -1;
    }
    *out = (uint32_t)in;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Threads. Set once by JNI_OnLoad. io.redlock.NativeCallbacks is looked up
 * there, with the class loader of the jar: the library's auto-extend thread,
 * attached later, could not find it with FindClass.
 * ------------------------------------------------------------------------- */
static JavaVM *rl_vm;
static jclass rl_cb_class;
static jmethodID rl_cb_lost, rl_cb_event, rl_cb_sink, rl_cb_node, rl_cb_acquired;
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
    rl_cb_event = (*env)->GetStaticMethodID(env, cls, "event", "(Ljava/lang/Object;II[B[BIZIIIJJJIIJIJ[J)V");
    rl_cb_sink = (*env)->GetStaticMethodID(env, cls, "eventSink", "(Ljava/lang/Object;[[B)Ljava/lang/Object;");
    rl_cb_node = (*env)->GetStaticMethodID(env, cls, "nodeResult", "(ILjava/lang/Object;IIJ[B)Ljava/lang/Object;");
    rl_cb_acquired = (*env)->GetStaticMethodID(env, cls, "acquired", "(Ljava/lang/Object;I[B[B[B)V");
    if (!rl_cb_lost || !rl_cb_event || !rl_cb_sink || !rl_cb_node || !rl_cb_acquired)
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
    args.name = (char *)"redlock-native";
    args.group = NULL;
    if ((*rl_vm)->AttachCurrentThreadAsDaemon(rl_vm, (void **)&env, &args) != JNI_OK)
        return NULL;
    pthread_setspecific(rl_attached, rl_vm);
    return env;
}

/* ---------------------------------------------------------------------------
 * Global references. A JNI global reference with one holder: an Options (its
 * listener) or the C library (a client's event sink, a lock's lost
 * listener). obj may be set after the holder has it.
 * ------------------------------------------------------------------------- */
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

/* ---------------------------------------------------------------------------
 * The callbacks
 * ------------------------------------------------------------------------- */

/* redlock_options.on_event of an Options with a Java listener. The Options
 * hold the listener itself; each client gets its own sink (rl_java_open),
 * which the C library frees with rl_java_sink_free. */
static void rl_java_on_event(const redlock_event *ev, void *userdata) {
    rl_jref *sink = userdata;
    JNIEnv *env;
    jbyteArray res, msg;
    jlongArray rtts = NULL;
    int ok;
    if (!sink || !sink->obj || !(env = rl_java_env()))
        return;
    /* Events come from inside a wrapped C call, never with an exception
     * pending; if one is, the JVM must not be called. */
    if ((*env)->ExceptionCheck(env) || (*env)->PushLocalFrame(env, 5) != 0)
        return;
    res = rl_java_bytes(env, ev->resource);
    msg = res ? rl_java_bytes(env, ev->message) : NULL;
    ok = msg != NULL;
    /* A round's node round trips (n_nodes of them, -1 for no reply), else null. */
    if (ok && ev->node_rtts_us) {
        rtts = (*env)->NewLongArray(env, (jsize)ev->n_nodes);
        if (rtts) {
            size_t i;
            for (i = 0; i < ev->n_nodes && !(*env)->ExceptionCheck(env); i++) {
                jlong v = (jlong)ev->node_rtts_us[i];
                (*env)->SetLongArrayRegion(env, rtts, (jsize)i, 1, &v);
            }
        }
        ok = rtts && !(*env)->ExceptionCheck(env);
    }
    if (ok)
        (*env)->CallStaticVoidMethod(env, rl_cb_class, rl_cb_event, sink->obj, (jint)ev->type, (jint)ev->code,
                                     res, msg, (jint)ev->attempt, (jboolean)(ev->automatic != 0),
                                     (jint)ev->nodes_ok, (jint)ev->quorum, (jint)ev->n_nodes,
                                     (jlong)ev->elapsed_us, (jlong)ev->validity_ms, (jlong)ev->fencing_token,
                                     (jint)ev->node, (jint)ev->node_outcome, (jlong)ev->node_rtt_us,
                                     (jint)ev->listener_state, (jlong)ev->held_us, rtts);
    /* NativeCallbacks.event catches the listener's exceptions; what is left
     * (out of memory) must not reach the C library's caller either. */
    if ((*env)->ExceptionCheck(env))
        (*env)->ExceptionClear(env);
    (*env)->PopLocalFrame(env, NULL);
}

/* redlock_lost_fn, on the client's auto-extend thread: a loss, or the
 * at-risk notice (REDLOCK_EATRISK). NativeCallbacks.lost only queues the
 * listener for a Java thread (see there why). */
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

/* The client's node URLs, for NODE_ERROR events, as a byte[][]; NULL with an
 * exception pending. */
static jobjectArray rl_java_node_urls(JNIEnv *env, const redlock_client *client, size_t n_nodes) {
    jclass bytes_class = (*env)->FindClass(env, "[B");
    jobjectArray urls = bytes_class ? (*env)->NewObjectArray(env, (jsize)n_nodes, bytes_class, NULL) : NULL;
    size_t i;
    for (i = 0; urls && i < n_nodes; i++) {
        jbyteArray u = rl_java_bytes(env, redlock_client_node_url(client, i));
        if (!u)
            return NULL;
        (*env)->SetObjectArrayElement(env, urls, (jsize)i, u);
        (*env)->DeleteLocalRef(env, u);
    }
    return urls;
}

/* A client whose Options carry a listener gets its own sink: the listener
 * and the client's node URLs, made once the client exists. The C library
 * copies on_event_userdata, so the Options are copied to hand it the sink
 * instead of the listener, and the C library frees the sink. */
int rl_java_open(redlock_client **out, const char *const *nodes, size_t n_nodes,
                 const redlock_options *options, char *err, size_t errsize) {
    redlock_options copy;
    rl_jref *sink;
    const rl_jref *listener;
    JNIEnv *env;
    jobjectArray urls;
    jobject obj;
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
    if ((*env)->PushLocalFrame(env, 4) == 0) {
        urls = rl_java_node_urls(env, *out, n_nodes);
        obj = urls ? (*env)->CallStaticObjectMethod(env, rl_cb_class, rl_cb_sink, listener->obj, urls) : NULL;
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

/* The lost listener's reference is the C library's to drop once it can no
 * longer be called (replaced, stopped, released, freed): rl_jref_free as the
 * userdata_free of redlock_lock_auto_extend. */
static void rl_java_lost_free(void *dispatch) {
    rl_jref_free(dispatch);
}

void rl_java_auto_extend(rl_status *st, redlock_lock *lock, uint32_t max_hold_ms, jobject dispatch) {
    rl_jref *ref = NULL;
    int rc;
    if (dispatch && !(ref = rl_jref_new(rl_java_env(), dispatch))) {
        rl_fail(st, REDLOCK_ENOMEM, NULL);
        return;
    }
    /* A listener hears the at-risk notice too (REDLOCK_EATRISK, at the
     * library's default margin): NativeCallbacks.lost gives it to
     * LockLostListener.onAtRisk, before the loss. */
    rc = redlock_lock_auto_extend(lock, max_hold_ms, ref ? REDLOCK_AT_RISK_DEFAULT : 0, ref ? rl_java_on_lost : NULL,
                                   ref, ref ? rl_java_lost_free : NULL);
    if (rc != 0) {
        rl_lock_fail(st, lock, rc);
        rl_jref_free(ref); /* not kept by a refused call */
    }
}

/* redlock_acquired_fn, on the client's acquire thread: the result goes to
 * the AcquireDispatch, which completes its future on a Java thread; the
 * dispatch's reference is dropped here, the one call it gets. */
static void rl_java_on_acquired(redlock_lock *lock, int rc, void *userdata) {
    rl_jref *dispatch = userdata;
    JNIEnv *env = rl_java_env();
    jbyteArray name = NULL, text = NULL, det = NULL;
    if (env && !(*env)->ExceptionCheck(env) && (*env)->PushLocalFrame(env, 4) == 0) {
        if (rc != 0) {
            name = rl_java_bytes(env, redlock_error_name(rc));
            text = name ? rl_java_bytes(env, redlock_strerror(rc)) : NULL;
            det = text ? rl_java_bytes(env, redlock_lock_errmsg(lock)) : NULL;
        }
        /* Out of memory for the words: the code alone still completes the future. */
        if ((*env)->ExceptionCheck(env))
            (*env)->ExceptionClear(env);
        (*env)->CallStaticVoidMethod(env, rl_cb_class, rl_cb_acquired, dispatch->obj, (jint)rc, name, text, det);
        if ((*env)->ExceptionCheck(env))
            (*env)->ExceptionClear(env);
        (*env)->PopLocalFrame(env, NULL);
    }
    rl_jref_free(dispatch);
}

/* An asynchronous call's start: rc is what it returned, ref its dispatch's
 * reference (kept by the call when it started, freed otherwise). */
static void rl_java_async_begun(rl_status *st, redlock_lock *lock, rl_jref *ref, int rc) {
    if (rc == 0)
        return;
    rl_jref_free(ref); /* not kept by a refused call */
    if (rc == REDLOCK_ESTATE) /* the handle's message is the call's under way */
        rl_fail(st, rc, "an asynchronous call on this lock is under way");
    else
        rl_lock_fail(st, lock, rc);
}

void rl_java_round_async(rl_status *st, redlock_lock *lock, int extend, uint32_t ttl_ms, jobject dispatch) {
    rl_jref *ref = rl_jref_new(rl_java_env(), dispatch);
    if (!ref)
        rl_fail(st, REDLOCK_ENOMEM, NULL);
    else
        rl_java_async_begun(st, lock, ref,
                            extend ? redlock_lock_extend_async(lock, ttl_ms, rl_java_on_acquired, ref)
                                   : redlock_lock_release_async(lock, rl_java_on_acquired, ref));
}

void rl_java_acquire_async(rl_status *st, redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms, jobject dispatch) {
    rl_jref *ref = rl_jref_new(rl_java_env(), dispatch);
    if (!ref)
        rl_fail(st, REDLOCK_ENOMEM, NULL);
    else
        rl_java_async_begun(st, lock, ref, redlock_lock_acquire_async(lock, ttl_ms, wait_ms, rl_java_on_acquired, ref));
}

int rl_java_set_listener(redlock_options *options, jobject listener) {
    rl_jref *ref = NULL;
    if (listener && !(ref = rl_jref_new(rl_java_env(), listener)))
        return REDLOCK_ENOMEM;
    rl_java_options_free(options);
    options->on_event = ref ? rl_java_on_event : NULL;
    options->on_event_userdata = ref;
    return 0;
}

void rl_java_options_free(redlock_options *options) {
    if (options->on_event == rl_java_on_event)
        rl_jref_free(options->on_event_userdata);
}

jobject rl_java_node_result(const redlock_lock *lock, size_t i, jobject url) {
    char msg[RL_MESSAGE_SIZE];
    int code = 0;
    int64_t rtt = 0;
    JNIEnv *env = rl_java_env();
    jbyteArray m;
    int outcome = redlock_lock_node_result(lock, i, &code, &rtt, msg, sizeof msg);
    if (outcome < 0) {
        rl_java_throw(env, outcome, "node index out of range");
        return NULL;
    }
    if (!(m = rl_java_bytes(env, msg)))
        return NULL;
    return (*env)->CallStaticObjectMethod(env, rl_cb_class, rl_cb_node, (jint)i, url, (jint)outcome, (jint)code,
                                          (jlong)rtt, m);
}

/* A RedlockException for code, made as rl_java_throw makes it, not thrown;
 * NULL with an exception pending. */
static jobject rl_java_exception(JNIEnv *env, int code, const char *detail) {
    jclass cls = (*env)->FindClass(env, "io/redlock/RedlockException");
    if (!cls)
        return NULL;
    jmethodID mid = (*env)->GetStaticMethodID(env, cls, "fromNative", "(I[B[B[B)Lio/redlock/RedlockException;");
    if (!mid)
        return NULL;
    jbyteArray name = rl_java_bytes(env, redlock_error_name(code)), text = rl_java_bytes(env, redlock_strerror(code)),
               det = rl_java_bytes(env, detail ? detail : "");
    if (!name || !text || !det)
        return NULL;
    jobject ex = (*env)->CallStaticObjectMethod(env, cls, mid, (jint)code, name, text, det);
    (*env)->DeleteLocalRef(env, name);
    (*env)->DeleteLocalRef(env, text);
    (*env)->DeleteLocalRef(env, det);
    (*env)->DeleteLocalRef(env, cls);   /* one a call: a list's results make many */
    return (*env)->ExceptionCheck(env) ? NULL : ex;
}

/* One element of tryAcquireMany's list: its serial, its index, and whether
 * this call entered its monitor (once per Lock, however often listed). */
typedef struct {
    jlong serial;
    jsize index;
    int entered;
} rl_many_item;

static int rl_by_serial(const void *a, const void *b) {
    jlong x = ((const rl_many_item *)a)->serial, y = ((const rl_many_item *)b)->serial;
    return x < y ? -1 : x > y;
}

jobjectArray rl_java_acquire_many(rl_status *st, redlock_client *client, jobjectArray locks, uint32_t ttl_ms,
                                  jobject jclient) {
    JNIEnv *env = rl_java_env();
    jsize n = locks ? (*env)->GetArrayLength(env, locks) : 0;
    jclass lock_cls = (*env)->FindClass(env, "io/redlock/Lock");
    jclass ex_cls = (*env)->FindClass(env, "io/redlock/RedlockException");
    jclass handle_cls = (*env)->FindClass(env, "io/redlock/NativeHandle");
    jfieldID serial = lock_cls ? (*env)->GetFieldID(env, lock_cls, "serial", "J") : NULL;
    jmethodID handle = lock_cls ? (*env)->GetMethodID(env, lock_cls, "handle", "()J") : NULL;
    jfieldID cptr = handle_cls ? (*env)->GetFieldID(env, handle_cls, "swigCPtr", "J") : NULL;
    if (!ex_cls || !serial || !handle || !cptr)
        return NULL;   /* an exception is pending */
    rl_many_item *items = calloc((size_t)n + 1, sizeof *items);
    redlock_lock **ptrs = calloc((size_t)n + 1, sizeof *ptrs);
    jsize *which = calloc((size_t)n + 1, sizeof *which);
    int *rcs = calloc((size_t)n + 1, sizeof *rcs);
    jobjectArray out = NULL;
    jobject last = NULL;
    jsize m = 0, seen = 0;
    int client_entered = 0;
    char err[512];
    if (!items || !ptrs || !which || !rcs) {
        rl_fail(st, REDLOCK_ENOMEM, NULL);
        goto done;
    }
    /* Local references are not kept per Lock (a list may hold 65,536):
     * each element is fetched from the array when it is needed. */
    for (jsize k = 0; k < n; k++) {
        jobject l = (*env)->GetObjectArrayElement(env, locks, k);   /* never null: Java checks */
        items[k].serial = (*env)->GetLongField(env, l, serial);
        items[k].index = k;
        (*env)->DeleteLocalRef(env, l);
    }
    /* Every Lock's monitor, once, in the order of their serials, so that
     * two overlapping calls cannot wait for each other, then the client's
     * (as every call on it, serialised with close()): what each lock's own
     * tryAcquire holds, held by JNI rather than by nested synchronized
     * blocks, so the C library gets the whole list in one call. */
    qsort(items, (size_t)n, sizeof *items, rl_by_serial);
    for (; seen < n; seen++) {
        jobject l = (*env)->GetObjectArrayElement(env, locks, items[seen].index);
        if (last && (*env)->IsSameObject(env, l, last)) {
            (*env)->DeleteLocalRef(env, l);   /* listed twice: entered once (C refuses the list) */
            continue;
        }
        if ((*env)->MonitorEnter(env, l) != JNI_OK) {
            (*env)->DeleteLocalRef(env, l);
            goto done;
        }
        items[seen].entered = 1;
        if (last)
            (*env)->DeleteLocalRef(env, last);
        last = l;
    }
    if ((*env)->MonitorEnter(env, jclient) != JNI_OK)
        goto done;
    client_entered = 1;
    /* The client's pointer again, now that close() cannot run: the one the
     * call was made with may have been freed since. */
    client = (redlock_client *)(intptr_t)(*env)->GetLongField(env, jclient, cptr);
    if (!client) {
        rl_fail(st, REDLOCK_ESTATE, "the handle is closed");
        goto done;
    }
    if (!(out = (*env)->NewObjectArray(env, n, ex_cls, NULL)))
        goto done;
    for (jsize k = 0; k < n; k++) {   /* in the caller's order, closed Locks left out */
        jobject l = (*env)->GetObjectArrayElement(env, locks, k);
        jlong h = (*env)->CallLongMethod(env, l, handle);
        (*env)->DeleteLocalRef(env, l);
        if ((*env)->ExceptionCheck(env)) {
            out = NULL;
            goto done;
        }
        if (h == 0) {
            jobject ex = rl_java_exception(env, REDLOCK_ESTATE, "the handle is closed");
            if (!ex) {
                out = NULL;
                goto done;
            }
            (*env)->SetObjectArrayElement(env, out, k, ex);
            (*env)->DeleteLocalRef(env, ex);
            continue;
        }
        which[m] = k;
        ptrs[m++] = (redlock_lock *)(intptr_t)h;
    }
    int rc = redlock_lock_acquire_many(client, ptrs, (size_t)m, ttl_ms, rcs, err, sizeof err);
    if (rc != 0) {
        rl_fail(st, rc, err);
        out = NULL;
        goto done;
    }
    for (jsize j = 0; j < m; j++) {
        if (rcs[j] == 0)
            continue;
        jobject ex = rl_java_exception(env, rcs[j], redlock_lock_errmsg(ptrs[j]));
        if (!ex) {
            out = NULL;
            goto done;
        }
        (*env)->SetObjectArrayElement(env, out, which[j], ex);
        (*env)->DeleteLocalRef(env, ex);
    }
done:
    if (client_entered)
        (*env)->MonitorExit(env, jclient);
    if (last)
        (*env)->DeleteLocalRef(env, last);
    /* Fetching the Locks again needs no exception pending: one is set
     * aside and thrown again once the monitors are given back. */
    jthrowable pending = (*env)->ExceptionOccurred(env);
    if (pending)
        (*env)->ExceptionClear(env);
    while (seen > 0) {
        if (!items[--seen].entered)
            continue;
        jobject l = (*env)->GetObjectArrayElement(env, locks, items[seen].index);
        (*env)->MonitorExit(env, l);
        (*env)->DeleteLocalRef(env, l);
    }
    if (pending) {
        (*env)->Throw(env, pending);
        out = NULL;
    }
    free(items);
    free(ptrs);
    free(which);
    free(rcs);
    return out;
}
