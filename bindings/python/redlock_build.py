# cffi build script (API mode) for the extension module redlock._redlock.
# setup.py names it in cffi_modules; it compiles c/src/*.c into the module, or links libredlock via pkg-config.
from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys

from cffi import FFI

# cffi runs this file with __file__ relative to setup.py's directory (the repository root).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
C_INCLUDE = os.path.join(ROOT, "c", "include")
C_SRC = os.path.join(ROOT, "c", "src")
C_COMMON = os.path.join(ROOT, "c", "common")

# Declarations of c/include/redlock.h. Every constant and the layouts of the
# options and event structs are left to the C compiler ("..."), so this text cannot drift from the
# header silently: a mismatch fails the build.
CDEF = """
#define REDLOCK_VERSION_MAJOR ...
#define REDLOCK_VERSION_MINOR ...
#define REDLOCK_VERSION_PATCH ...

typedef enum redlock_error_code {
    REDLOCK_OK, REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ENOTACQUIRED,
    REDLOCK_ENOQUORUM, REDLOCK_EEXPIRED, REDLOCK_ELOST, REDLOCK_ETIMEDOUT,
    REDLOCK_EIO, REDLOCK_ESERVER, REDLOCK_EAUTH, REDLOCK_ETLS,
    REDLOCK_ENOTSUP, REDLOCK_ECANCELED, REDLOCK_ELIMIT, REDLOCK_ESTATE,
    ...
} redlock_error_code;

#define REDLOCK_MAX_NODES ...
#define REDLOCK_MAX_RESOURCE_LEN ...
#define REDLOCK_MAX_PREFIX_LEN ...
#define REDLOCK_MAX_TTL_MS ...
#define REDLOCK_MAX_WAIT_MS ...

typedef struct redlock_client redlock_client;
typedef struct redlock_lock redlock_lock;

typedef enum redlock_event_type {
    REDLOCK_EVENT_ACQUIRED, REDLOCK_EVENT_ACQUIRE_FAILED, REDLOCK_EVENT_EXTENDED,
    REDLOCK_EVENT_EXTEND_FAILED, REDLOCK_EVENT_LOST, REDLOCK_EVENT_RELEASED,
    REDLOCK_EVENT_RELEASE_FAILED, REDLOCK_EVENT_NODE_ERROR,
    ...
} redlock_event_type;

typedef enum redlock_node_outcome {
    REDLOCK_NODE_NONE, REDLOCK_NODE_OK, REDLOCK_NODE_REFUSED, REDLOCK_NODE_ERROR,
    REDLOCK_NODE_TIMEOUT, REDLOCK_NODE_DOWN, REDLOCK_NODE_NOT_WAITED,
    ...
} redlock_node_outcome;

typedef struct redlock_event {
    int type;
    int code;
    const redlock_lock *lock;
    const char *resource;
    const char *message;
    uint32_t attempt;
    int automatic;
    int nodes_ok;
    int quorum;
    size_t n_nodes;
    int64_t elapsed_us;
    int64_t validity_ms;
    uint64_t fencing_token;
    size_t node;
    int node_outcome;
    int64_t node_rtt_us;
    ...;
} redlock_event;

typedef void (*redlock_event_fn)(const redlock_event *event, void *userdata);

#define REDLOCK_OPTIONS_VERSION ...
#define REDLOCK_OPT_FUNCTIONS ...
#define REDLOCK_OPT_FENCING ...

typedef struct redlock_options {
    unsigned int version;
    uint32_t retry_count;
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    uint32_t wait_ms;
    double drift_factor;
    uint32_t drift_min_ms;
    uint32_t node_timeout_ms;
    uint32_t connect_timeout_ms;
    const char *key_prefix;
    uint32_t max_extensions;
    uint32_t max_hold_ms;
    uint32_t flags;
    const char *tls_ca_file;
    const char *tls_ca_dir;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_server_name;
    uint32_t tls_insecure_skip_verify;
    redlock_event_fn on_event;
    void *on_event_userdata;
    void (*on_event_userdata_free)(void *userdata);
    ...;
} redlock_options;

int redlock_options_init_version(redlock_options *opts, unsigned int version);
void redlock_options_init(redlock_options *opts);

int redlock_client_new(redlock_client **out, const char *const *node_urls,
                       size_t n_nodes, const redlock_options *opts);
int redlock_client_open(redlock_client **out, const char *const *node_urls,
                        size_t n_nodes, const redlock_options *opts,
                        char *errbuf, size_t errbuf_size);
void redlock_client_free(redlock_client *client);
size_t redlock_client_node_count(const redlock_client *client);
const char *redlock_client_node_url(const redlock_client *client, size_t i);
int redlock_client_load_functions(redlock_client *client, char *errbuf, size_t errbuf_size);

int redlock_acquire(redlock_client *client, const char *resource,
                    uint32_t ttl_ms, redlock_lock **out);
int redlock_try_acquire(redlock_client *client, const char *resource,
                        uint32_t ttl_ms, redlock_lock **out);
int redlock_lock_new(redlock_lock **out, redlock_client *client,
                     const char *resource);

#define REDLOCK_LOCK_OPTIONS_VERSION ...
typedef struct redlock_lock_options {
    unsigned int version;
    uint32_t retry_count;
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    uint32_t wait_ms;
    double drift_factor;
    uint32_t drift_min_ms;
    ...;
} redlock_lock_options;
int redlock_lock_get_options(const redlock_lock *lock, redlock_lock_options *out);
int redlock_lock_set_options(redlock_lock *lock, const redlock_lock_options *opts);

#define REDLOCK_WAIT_DEFAULT ...
#define REDLOCK_WAIT_NONE ...

int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms);
int redlock_extend(redlock_lock *lock, uint32_t ttl_ms);
int redlock_release(redlock_lock *lock);
void redlock_lock_cancel(redlock_lock *lock);
void redlock_lock_cancel_reset(redlock_lock *lock);
void redlock_lock_free(redlock_lock *lock);

uint64_t redlock_lock_fencing_token(const redlock_lock *lock);

typedef void (*redlock_lost_fn)(redlock_lock *lock, int code, const char *message, void *userdata);
#define REDLOCK_AUTO_EXTEND_MAX_HOLD_MS ...
int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms,
                             redlock_lost_fn on_lost, void *userdata);
int redlock_lock_auto_extend_stop(redlock_lock *lock);

int redlock_lock_node_result(const redlock_lock *lock, size_t i, int *code_out,
                             int64_t *rtt_us_out, char *msgbuf, size_t msgbuf_size);

int64_t redlock_lock_validity_ms(const redlock_lock *lock);
int redlock_lock_is_held(const redlock_lock *lock);
const char *redlock_lock_resource(const redlock_lock *lock);
const char *redlock_lock_errmsg(const redlock_lock *lock);
int redlock_lock_errcode(const redlock_lock *lock);

const char *redlock_strerror(int code);
const char *redlock_error_name(int code);
const char *redlock_version(void);

/* The binding's callbacks (bindings/python/redlock/_callbacks.py). C calls
 * them on the thread that ran a round, often the client's auto-extend
 * thread, and the _free one on the thread freeing the client's last handle;
 * cffi takes the GIL for them. */
extern "Python" void _redlock_py_on_event(const redlock_event *event, void *userdata);
extern "Python" void _redlock_py_on_event_free(void *userdata);
extern "Python" void _redlock_py_on_lost(redlock_lock *lock, int code, const char *message,
                                         void *userdata);
"""


def pkg_config(*args: str) -> list[str]:
    """Flags from pkg-config, with an error that says what to install."""
    cmd = [os.environ.get("PKG_CONFIG", "pkg-config"), *args]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("redlock: pkg-config not found; install it (Debian: apt-get install pkg-config)")
    except subprocess.CalledProcessError as err:
        sys.exit(
            f"redlock: `{' '.join(cmd)}` failed: {err.stderr.strip()}\n"
            "Install the development packages (Debian: apt-get install libhiredis-dev libssl-dev;"
            " hiredis_ssl comes with libhiredis-dev),"
            " or for REDLOCK_USE_SYSTEM_LIB=1 install libredlock with its redlock.pc."
        )
    return shlex.split(out)


def split_flags(flags: list[str]) -> dict[str, list]:
    """Sorts compiler/linker flags into the keyword arguments setuptools' Extension takes."""
    kw: dict[str, list] = {
        "include_dirs": [], "library_dirs": [], "libraries": [], "define_macros": [],
        "extra_compile_args": [], "extra_link_args": [],
    }
    for flag in flags:
        if flag.startswith("-I"):
            kw["include_dirs"].append(flag[2:])
        elif flag.startswith("-L"):
            kw["library_dirs"].append(flag[2:])
        elif flag.startswith("-l"):
            kw["libraries"].append(flag[2:])
        elif flag.startswith("-D"):
            name, _, value = flag[2:].partition("=")
            kw["define_macros"].append((name, value or None))
        elif flag.startswith("-Wl,") or flag == "-pthread":
            kw["extra_link_args"].append(flag)
            if flag == "-pthread":
                kw["extra_compile_args"].append(flag)
        else:
            kw["extra_compile_args"].append(flag)
    return kw


def rel(path: str) -> str:
    # setuptools places object files by source path; relative paths keep them under build/.
    try:
        r = os.path.relpath(path)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def use_system_lib() -> bool:
    return os.environ.get("REDLOCK_USE_SYSTEM_LIB", "").strip().lower() in ("1", "true", "yes", "on")


def make_ffibuilder() -> FFI:
    ffibuilder = FFI()
    ffibuilder.cdef(CDEF)
    if use_system_lib():
        # The installed libredlock and its header; the module links to libredlock.so.0.
        kw = split_flags(pkg_config("--cflags", "--libs", "redlock"))
        # pkg-config prints -L only for a prefix outside the linker's default path: find it there at run time too.
        kw["runtime_library_dirs"] = list(kw["library_dirs"])
        sources: list[str] = []
    else:
        # The C core compiled into the extension: no libredlock needed at run time.
        sources = sorted(rel(p) for d in (C_SRC, C_COMMON) for p in glob.glob(os.path.join(d, "*.c")))
        if not sources:
            sys.exit(f"redlock: no C sources found under {C_SRC}")
        kw = split_flags(pkg_config("--cflags", "--libs", "hiredis", "hiredis_ssl", "libssl", "libcrypto"))
        kw["include_dirs"][:0] = [rel(C_INCLUDE), rel(C_SRC), rel(C_COMMON)]
        kw["define_macros"][:0] = [("REDLOCK_BUILDING", None), ("_GNU_SOURCE", None)]
        kw["extra_compile_args"][:0] = ["-fvisibility=hidden", "-std=gnu11"]
        kw["libraries"].append("pthread")
    ffibuilder.set_source("redlock._redlock", '#include "redlock.h"\n', sources=sources, **kw)
    return ffibuilder


ffibuilder = make_ffibuilder()

