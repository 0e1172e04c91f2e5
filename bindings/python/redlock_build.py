# SPDX-License-Identifier: BSD-3-Clause
# cffi build script (API mode) for the extension module redlock._redlock.
# setup.py names it in cffi_modules; it compiles the C core into the module (the sources of
# c/sources.txt with the flags of c/cflags.txt, as CMake and Go do: docs/design.md, "One
# compilation"), or links libredlock via pkg-config. REDLOCK_WERROR=1 adds -Werror (make
# test-build-flags).
from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from cffi import FFI

# cffi runs this file with __file__ relative to setup.py's directory (the repository root).
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
C_INCLUDE = os.path.join(ROOT, "c", "include")
C_SRC = os.path.join(ROOT, "c", "src")
C_COMMON = os.path.join(ROOT, "c", "common")
C_ENGINE = os.path.join(C_SRC, "engine")
C_SOURCES_LIST = os.path.join(ROOT, "c", "sources.txt")
C_FLAGS_LIST = os.path.join(ROOT, "c", "cflags.txt")

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
    REDLOCK_EUNREACHABLE, REDLOCK_EPERM, REDLOCK_EATRISK, REDLOCK_EFENCED,
    ...
} redlock_error_code;

#define REDLOCK_MAX_NODES ...
#define REDLOCK_MAX_RESOURCE_LEN ...
#define REDLOCK_MAX_PREFIX_LEN ...
#define REDLOCK_MAX_TTL_MS ...
#define REDLOCK_MAX_WAIT_MS ...
#define REDLOCK_MAX_NODE_TIMEOUT_MS ...
#define REDLOCK_MAX_CONNECT_TIMEOUT_MS ...
#define REDLOCK_MAX_DRIFT_MIN_MS ...
static const double REDLOCK_MAX_DRIFT_FACTOR;

typedef struct redlock_client redlock_client;
typedef struct redlock_lock redlock_lock;

typedef enum redlock_event_type {
    REDLOCK_EVENT_ACQUIRED, REDLOCK_EVENT_ACQUIRE_FAILED, REDLOCK_EVENT_EXTENDED,
    REDLOCK_EVENT_EXTEND_FAILED, REDLOCK_EVENT_LOST, REDLOCK_EVENT_RELEASED,
    REDLOCK_EVENT_RELEASE_FAILED, REDLOCK_EVENT_NODE_ERROR, REDLOCK_EVENT_WOKEN,
    REDLOCK_EVENT_LISTENER, REDLOCK_EVENT_ACQUIRE_DONE,
    REDLOCK_EVENT_WATCH_BEHIND, REDLOCK_EVENT_AT_RISK,
    ...
} redlock_event_type;

typedef enum redlock_listener_state {
    REDLOCK_LISTENER_OFF, REDLOCK_LISTENER_CONNECTING, REDLOCK_LISTENER_READY,
    REDLOCK_LISTENER_DOWN, REDLOCK_LISTENER_REFUSED,
    ...
} redlock_listener_state;

typedef enum redlock_node_outcome {
    REDLOCK_NODE_NONE, REDLOCK_NODE_OK, REDLOCK_NODE_REFUSED, REDLOCK_NODE_ERROR,
    REDLOCK_NODE_TIMEOUT, REDLOCK_NODE_DOWN, REDLOCK_NODE_NOT_WAITED, REDLOCK_NODE_QUARANTINED,
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
    int listener_state;
    int64_t held_us;
    const int64_t *node_rtts_us;
    ...;
} redlock_event;

typedef void (*redlock_event_fn)(const redlock_event *event, void *userdata);

#define REDLOCK_OPTIONS_VERSION ...
#define REDLOCK_OPT_FUNCTIONS ...
#define REDLOCK_OPT_FENCING ...
#define REDLOCK_OPT_NO_WAKE ...
#define REDLOCK_OPT_WAKE ...
#define REDLOCK_OPT_FAIR ...
#define REDLOCK_OPT_NO_QUARANTINE ...
#define REDLOCK_UNREACHABLE_NEVER ...

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
    uint32_t unreachable_ms;
    uint32_t quarantine_ttl_ms;
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
int redlock_client_listener_state(const redlock_client *client, size_t i, char *msgbuf,
                                  size_t msgbuf_size);
int redlock_client_load_functions(redlock_client *client, char *errbuf, size_t errbuf_size);

int redlock_acquire(redlock_lock **out, redlock_client *client, const char *resource,
                    uint32_t ttl_ms);
int redlock_try_acquire(redlock_lock **out, redlock_client *client, const char *resource,
                        uint32_t ttl_ms);
int redlock_lock_new(redlock_lock **out, redlock_client *client,
                     const char *resource);
int redlock_lock_open(redlock_lock **out, redlock_client *client, const char *resource,
                      char *errbuf, size_t errbuf_size);
int redlock_lock_new_read(redlock_lock **out, redlock_client *client, const char *resource);
int redlock_lock_new_write(redlock_lock **out, redlock_client *client, const char *resource);
int redlock_lock_open_read(redlock_lock **out, redlock_client *client, const char *resource,
                           char *errbuf, size_t errbuf_size);
int redlock_lock_open_write(redlock_lock **out, redlock_client *client, const char *resource,
                            char *errbuf, size_t errbuf_size);
int redlock_lock_downgrade(redlock_lock *lock);

/* The counting semaphore: a kind of lock handle (docs/c-api.md). */
#define REDLOCK_MAX_SEM_LIMIT ...
int redlock_lock_open_semaphore(redlock_lock **out, redlock_client *client, const char *resource,
                                uint32_t limit, uint32_t permits, char *errbuf, size_t errbuf_size);
int redlock_lock_semaphore_limit(const redlock_lock *lock, uint32_t *limit_out, uint32_t *permits_out);

/* The multi-resource lock: a kind of lock handle (docs/c-api.md). */
#define REDLOCK_MAX_MULTI ...
int redlock_lock_open_multi(redlock_lock **out, redlock_client *client, const char *const *resources,
                            size_t n, char *errbuf, size_t errbuf_size);
int redlock_lock_multi_count(const redlock_lock *lock, size_t *n_out);

/* One attempt at each of many locks, pipelined (Redlock.try_acquire_many). */
#define REDLOCK_ACQUIRE_MANY_MAX ...
int redlock_lock_acquire_many(redlock_client *client, redlock_lock *const *locks, size_t n, uint32_t ttl_ms,
                              int *results, char *errbuf, size_t errbuf_size);

#define REDLOCK_LOCK_OPTIONS_VERSION ...
typedef struct redlock_lock_options {
    unsigned int version;
    uint32_t retry_count;
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    uint32_t wait_ms;
    double drift_factor;
    uint32_t drift_min_ms;
    uint32_t flags;
    ...;
} redlock_lock_options;
int redlock_lock_get_options(const redlock_lock *lock, redlock_lock_options *out);
int redlock_lock_set_options(redlock_lock *lock, const redlock_lock_options *opts);
int redlock_flags_wake(uint32_t flags);
uint32_t redlock_flags_set_wake(uint32_t flags, int on);

#define REDLOCK_WAIT_DEFAULT ...
#define REDLOCK_WAIT_NONE ...
#define REDLOCK_WAIT_FOREVER ...

int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms);
typedef void (*redlock_acquired_fn)(redlock_lock *lock, int rc, void *userdata);
int redlock_lock_acquire_async(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms,
                               redlock_acquired_fn done, void *userdata);
int redlock_lock_release_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata);
int redlock_lock_downgrade_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata);
int redlock_lock_extend_async(redlock_lock *lock, uint32_t ttl_ms, redlock_acquired_fn done, void *userdata);
int redlock_lock_extend(redlock_lock *lock, uint32_t ttl_ms);
int redlock_lock_release(redlock_lock *lock);
void redlock_lock_cancel(redlock_lock *lock);
void redlock_lock_cancel_reset(redlock_lock *lock);
void redlock_lock_free(redlock_lock *lock);

uint64_t redlock_lock_fencing_token(const redlock_lock *lock);
#define REDLOCK_FENCE_RETENTION_MS ...
const char *redlock_fence_script(void);
const char *redlock_fence_script_sha1(void);
int redlock_fence_key(char *out, size_t size, const char *resource);
int redlock_fence_refusal(const char *msg, size_t len, uint64_t *token, uint64_t *fence);
#define REDLOCK_FENCE_SQL_UPSERT ...
#define REDLOCK_FENCE_SQL_UPDATE ...
#define REDLOCK_FENCE_SQL_READ ...
#define REDLOCK_SQL_DOLLAR ...
#define REDLOCK_SQL_FORMAT ...
#define REDLOCK_SQL_QMARK ...
int redlock_fence_sql(char *out, size_t size, int statement, int placeholder, const char *table,
                      const char *const *key_columns, size_t n_key, const char *const *value_columns,
                      size_t n_values, const char *fence_column, uint64_t token, char *errbuf,
                      size_t errbuf_size);

typedef void (*redlock_lost_fn)(redlock_lock *lock, int code, const char *message, void *userdata);
#define REDLOCK_AUTO_EXTEND_MAX_HOLD_MS ...
#define REDLOCK_AT_RISK_DEFAULT ...
int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, uint32_t at_risk_ms,
                             redlock_lost_fn on_lost, void *userdata,
                             void (*userdata_free)(void *userdata));
int redlock_lock_auto_extend_stop(redlock_lock *lock);

int redlock_lock_node_result(const redlock_lock *lock, size_t i, int *code_out,
                             int64_t *rtt_us_out, char *msgbuf, size_t msgbuf_size);

int64_t redlock_lock_validity_ms(const redlock_lock *lock);
uint32_t redlock_lock_extensions(const redlock_lock *lock);
int redlock_lock_is_held(const redlock_lock *lock);
const char *redlock_lock_resource(const redlock_lock *lock);
const char *redlock_lock_errmsg(const redlock_lock *lock);
int redlock_lock_errcode(const redlock_lock *lock);

const char *redlock_strerror(int code);
const char *redlock_error_name(int code);
int redlock_error_is_retryable(int code);
const char *redlock_version(void);

/* Leader election (bindings/python/redlock/_election.py). */
#define REDLOCK_ELECTION_MAX_VALUE ...
#define REDLOCK_LEADER_VERSION ...
typedef struct redlock_election redlock_election;
typedef struct redlock_leader {
    unsigned int version;
    int present;
    uint64_t term;
    uint64_t revision;
    size_t value_len;
    char value[...];
    ...;
} redlock_leader;
int redlock_election_new(redlock_election **out, redlock_client *client, const char *name);
int redlock_election_open(redlock_election **out, redlock_client *client, const char *name,
                          char *errbuf, size_t errbuf_size);
void redlock_election_free(redlock_election *e);
int redlock_election_campaign(redlock_election *e, const char *value, uint32_t ttl_ms, int64_t wait_ms);
typedef void (*redlock_campaigned_fn)(redlock_election *e, int rc, void *userdata);
int redlock_election_campaign_async(redlock_election *e, const char *value, uint32_t ttl_ms, int64_t wait_ms,
                                    redlock_campaigned_fn done, void *userdata);
int redlock_election_proclaim(redlock_election *e, const char *value);
int redlock_election_resign(redlock_election *e);
int redlock_election_resign_async(redlock_election *e, redlock_campaigned_fn done, void *userdata);
int redlock_election_proclaim_async(redlock_election *e, const char *value, redlock_campaigned_fn done, void *userdata);
int redlock_election_leader(redlock_election *e, redlock_leader *out);
int redlock_election_observe(redlock_election *e, redlock_leader *last, int64_t wait_ms);
typedef void (*redlock_observed_fn)(redlock_election *e, int rc, void *userdata);
int redlock_election_observe_async(redlock_election *e, redlock_leader *last, int64_t wait_ms,
                                   redlock_observed_fn done, void *userdata);
void redlock_election_cancel(redlock_election *e);
void redlock_election_cancel_reset(redlock_election *e);
int redlock_election_is_leader(const redlock_election *e);
uint64_t redlock_election_term(const redlock_election *e);
const redlock_lock *redlock_election_lock(const redlock_election *e);
const char *redlock_election_errmsg(const redlock_election *e);

/* The binding's callbacks (bindings/python/redlock/_callbacks.py). C calls
 * them on the thread that ran a round, often the client's auto-extend
 * thread, and the _free one on the thread freeing the client's last handle;
 * cffi takes the GIL for them. */
extern "Python" void _redlock_py_on_event(const redlock_event *event, void *userdata);
extern "Python" void _redlock_py_on_event_free(void *userdata);
extern "Python" void _redlock_py_on_lost(redlock_lock *lock, int code, const char *message,
                                         void *userdata);
extern "Python" void _redlock_py_on_lost_free(void *userdata);
extern "Python" void _redlock_py_on_acquired(redlock_lock *lock, int rc, void *userdata);
extern "Python" void _redlock_py_on_election_done(redlock_election *e, int rc, void *userdata);
"""


# What the default build needs, as pkg-config modules, with the oldest version that works.
BUNDLED_MODULES = {"hiredis": "1.0.0", "hiredis_ssl": "1.0.0", "libssl": "1.1.1", "libcrypto": "1.1.1"}

HOW_TO_GET = """\
How to get them:
  Debian 12 (bookworm): hiredis 1.x is in bookworm-backports (bookworm's own libhiredis-dev is 0.14):
      add a "bookworm-backports main" line for the mirror your bookworm line already uses,
      e.g. in /etc/apt/sources.list.d/bookworm-backports.list, then: apt-get update
      apt-get install -t bookworm-backports libhiredict-shims-dev   # or libhiredis-dev >= 1.0
      apt-get install pkg-config libssl-dev
  Debian 13 and later, Ubuntu 24.04 and later:
      apt-get install pkg-config libhiredis-dev libssl-dev
  Ubuntu 22.04 and older (libhiredis-dev 0.14): build hiredis >= 1.0 with TLS from source
      (https://github.com/redis/hiredis: make USE_SSL=1 && make USE_SSL=1 install), then run
      ldconfig, and set PKG_CONFIG_PATH if it went outside /usr/local.
  Fedora, RHEL: dnf install pkgconf-pkg-config hiredis-devel openssl-devel
Or install the prebuilt manylinux wheel (`make wheel`), which carries hiredis and OpenSSL inside."""


def _pkg_config_cmd() -> list[str]:
    cmd = shlex.split(os.environ.get("PKG_CONFIG", "pkg-config"))
    if not cmd or shutil.which(cmd[0]) is None:
        sys.exit(f"redlock: cannot build the extension: {cmd[0] if cmd else 'pkg-config'} not found.\n"
                 "Install pkg-config (Debian, Ubuntu: apt-get install pkg-config; Fedora: dnf install "
                 "pkgconf-pkg-config), or set PKG_CONFIG to its path.\n" + HOW_TO_GET)
    return cmd


def require_modules(modules: dict[str, str]) -> None:
    """Stops the build with one message that names every missing or too old module."""
    cmd = _pkg_config_cmd()
    missing, old = [], []
    for module, least in modules.items():
        if subprocess.run([*cmd, "--exists", module], capture_output=True).returncode != 0:
            missing.append(module)
        elif least and subprocess.run([*cmd, f"--atleast-version={least}", module],
                                      capture_output=True).returncode != 0:
            have = subprocess.run([*cmd, "--modversion", module], capture_output=True,
                                  text=True).stdout.strip()
            old.append(f"{module} {have or '(unknown version)'} is older than {least}")
    if not missing and not old:
        return
    what = []
    if missing:
        what.append("pkg-config finds no " + ", ".join(missing))
    what += old
    path = os.environ.get("PKG_CONFIG_PATH")
    sys.exit(
        "redlock: cannot build the extension: " + "; ".join(what) + ".\n"
        "It needs the development files (headers and .pc files) of hiredis >= 1.0 with its TLS part\n"
        "(hiredis.pc and hiredis_ssl.pc; hiredict's shims provide both) and of OpenSSL (libssl.pc,\n"
        "libcrypto.pc)" + (f"; PKG_CONFIG_PATH is {path!r}" if path else "") + ".\n" + HOW_TO_GET)


def require_compiler() -> None:
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        sys.exit(f"redlock: cannot build the extension: Python.h is not in {include}.\n"
                 "Install the Python headers (Debian, Ubuntu: apt-get install python3-dev; "
                 "Fedora: dnf install python3-devel).")
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if cc and shutil.which(cc[0]) is None:
        sys.exit(f"redlock: cannot build the extension: no C compiler ({cc[0]} not found).\n"
                 "Install one (Debian, Ubuntu: apt-get install gcc; Fedora: dnf install gcc).")


def pkg_config(*args: str) -> list[str]:
    """Flags from pkg-config (the modules were checked by require_modules)."""
    cmd = [*_pkg_config_cmd(), *args]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as err:
        sys.exit(f"redlock: cannot build the extension: `{' '.join(cmd)}` failed: "
                 f"{err.stderr.strip()}\n" + HOW_TO_GET)
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


def read_list(path: str) -> list[str]:
    """The items of c/sources.txt or c/cflags.txt: one a line; blank lines and '#' lines skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
    except OSError as err:
        sys.exit(f"redlock: cannot build the extension: {err}")
    return [line for line in lines if line and not line.startswith("#")]


def env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def core_sources() -> list[str]:
    sources = [os.path.join(ROOT, *s.split("/")) for s in read_list(C_SOURCES_LIST)]
    missing = [s for s in sources if not os.path.isfile(s)]
    if not sources or missing:
        sys.exit(f"redlock: cannot build the extension: {rel(C_SOURCES_LIST)} "
                 + (f"names files that do not exist: {', '.join(map(rel, missing))}" if missing else "is empty"))
    return [rel(s) for s in sources]


def core_flags() -> list[str]:
    """c/cflags.txt, and -Werror when REDLOCK_WERROR is set."""
    return read_list(C_FLAGS_LIST) + (["-Werror"] if env_true("REDLOCK_WERROR") else [])


def use_system_lib() -> bool:
    return env_true("REDLOCK_USE_SYSTEM_LIB")


def make_ffibuilder() -> FFI:
    ffibuilder = FFI()
    ffibuilder.cdef(CDEF)
    require_compiler()
    if use_system_lib():
        # The installed libredlock and its header; the module links to libredlock.so.0.
        cmd = _pkg_config_cmd()
        if subprocess.run([*cmd, "--exists", "redlock"], capture_output=True).returncode != 0:
            sys.exit("redlock: REDLOCK_USE_SYSTEM_LIB=1, but pkg-config finds no redlock.pc.\n"
                     "Install libredlock (cmake -S . -B build && cmake --build build && "
                     "cmake --install build --prefix PREFIX) and set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig,"
                     " or build without REDLOCK_USE_SYSTEM_LIB to compile the C core into the module.")
        flags = pkg_config("--cflags", "--libs", "redlock")
        kw = split_flags(flags)
        # pkg-config prints -L only for a prefix outside the linker's default path: find it there at run time too.
        kw["runtime_library_dirs"] = list(kw["library_dirs"])
        sources: list[str] = []
        depends: list[str] = []
        mode = "system libredlock"
    else:
        # The C core compiled into the extension: no libredlock needed at run time. The sources and
        # flags are CMake's and Go's (c/sources.txt, c/cflags.txt); they apply to cffi's generated
        # file too, which compiles without a warning under them.
        sources = core_sources()
        require_modules(BUNDLED_MODULES)
        flags = core_flags() + pkg_config("--cflags", "--libs", *BUNDLED_MODULES)
        kw = split_flags(flags)
        kw["include_dirs"][:0] = [rel(C_INCLUDE), rel(C_SRC), rel(C_COMMON)]
        kw["libraries"].append("pthread")
        # Headers and the two lists too: setuptools rebuilds only when a listed file is newer than
        # the module.
        depends = sorted(rel(p) for d in (C_INCLUDE, C_SRC, C_ENGINE, C_COMMON)
                         for p in glob.glob(os.path.join(d, "*.h"))) + [rel(C_SOURCES_LIST), rel(C_FLAGS_LIST)]
        mode = "C core compiled in"
    # The build's mode and flags go into the generated C file. cffi rewrites that file only when
    # its text changes, and setuptools relinks only when a source is newer than the module: without
    # this line, switching REDLOCK_USE_SYSTEM_LIB (or pkg-config's answer) after an earlier build in
    # the same build folder kept the old module until the folder was deleted.
    shown = " ".join(flags).replace("*/", "* /")
    stamp = f"/* redlock build: {mode}; flags: {shown} */\n"
    ffibuilder.set_source("redlock._redlock", stamp + '#define REDLOCK_EXPERIMENTAL\n#include "redlock.h"\n', sources=sources,
                          depends=depends, **kw)
    return ffibuilder


ffibuilder = make_ffibuilder()

