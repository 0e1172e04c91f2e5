# SPDX-License-Identifier: BSD-3-Clause
# The extension's build script (bindings/python/redlock_build.py), run against a fake pkg-config:
# a missing or too old dependency stops the build with a message that names it and says how to get
# it; and the generated C file records the build's mode and flags, so switching
# REDLOCK_USE_SYSTEM_LIB after an earlier build changes that file and setuptools rebuilds the module.
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_SCRIPT = os.path.join(ROOT, "bindings", "python", "redlock_build.py")

if not os.path.exists(BUILD_SCRIPT):
    pytest.skip(f"no {BUILD_SCRIPT}: these tests need the source tree", allow_module_level=True)

FAKE = textwrap.dedent("""\
    #!/bin/sh
    # pkg-config that knows $FAKE_MODULES ("name=version ..."); prints $FAKE_FLAGS_<name> for flags.
    mode=flags; least=
    for a; do
        case $a in
            --exists) mode=exists;;
            --modversion) mode=version;;
            --atleast-version=*) mode=least; least=${a#--atleast-version=};;
            --cflags|--libs) ;;
            -*) ;;
            *) set -- "$@"; found=
               for m in $FAKE_MODULES; do [ "${m%%=*}" = "$a" ] && found=${m#*=}; done
               [ -n "$found" ] || { echo "Package $a was not found" >&2; exit 1; }
               case $mode in
                   version) echo "$found";;
                   least) [ "$(printf '%s\\n%s\\n' "$least" "$found" | sort -V | head -1)" = "$least" ] || exit 1;;
                   flags) eval "printf '%s ' \\"\\$FAKE_FLAGS_$a\\"";;
               esac;;
        esac
    done
    [ $mode = flags ] && echo
    exit 0
""")

GOOD = "hiredis=1.2.0 hiredis_ssl=1.2.0 libssl=3.0.0 libcrypto=3.0.0 redlock=0.1.0"


@pytest.fixture
def fake_pkg_config(tmp_path):
    path = tmp_path / "pkg-config"
    path.write_text(FAKE)
    path.chmod(0o755)
    return str(path)


def run_build_script(pkg_config, modules, system_lib=False):
    env = dict(os.environ, PKG_CONFIG=pkg_config, FAKE_MODULES=modules,
               FAKE_FLAGS_hiredis="-I/fake/hiredis -lhiredis", FAKE_FLAGS_hiredis_ssl="-lhiredis_ssl",
               FAKE_FLAGS_libssl="-lssl", FAKE_FLAGS_libcrypto="-lcrypto",
               FAKE_FLAGS_redlock="-I/opt/redlock/include -L/opt/redlock/lib -lredlock")
    env.pop("REDLOCK_USE_SYSTEM_LIB", None)
    if system_lib:
        env["REDLOCK_USE_SYSTEM_LIB"] = "1"
    code = ("import sys; sys.path.insert(0, %r); import redlock_build as b; "
            "name, source, ext, kw = b.ffibuilder._assigned_source; "
            "print(repr((source, sorted(kw.get('libraries', [])), sorted(kw.get('depends', [])))))"
            % os.path.dirname(BUILD_SCRIPT))
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True)


def test_generated_source_differs_by_mode_and_flags(fake_pkg_config):
    bundled = run_build_script(fake_pkg_config, GOOD)
    system = run_build_script(fake_pkg_config, GOOD, system_lib=True)
    assert bundled.returncode == 0, bundled.stderr
    assert system.returncode == 0, system.stderr
    b_source, b_libs, b_depends = eval(bundled.stdout)
    s_source, s_libs, s_depends = eval(system.stdout)
    # The generated C file's text differs, so cffi rewrites it and setuptools relinks.
    assert b_source != s_source
    assert "C core compiled in" in b_source and "-lhiredis" in b_source
    assert "system libredlock" in s_source and "-lredlock" in s_source
    assert "redlock" in s_libs and "hiredis" not in s_libs
    assert "hiredis" in b_libs
    # Headers are dependencies of the bundled build: editing one rebuilds the module.
    assert any(d.endswith("redlock.h") for d in b_depends)
    # Same mode and flags: the same text, so an unchanged build is not redone.
    assert eval(run_build_script(fake_pkg_config, GOOD).stdout)[0] == b_source


@pytest.mark.parametrize("modules,named", [
    ("libssl=3.0.0 libcrypto=3.0.0", "pkg-config finds no hiredis, hiredis_ssl"),
    ("hiredis=1.2.0 libssl=3.0.0 libcrypto=3.0.0", "pkg-config finds no hiredis_ssl"),
    ("hiredis=1.2.0 hiredis_ssl=1.2.0", "pkg-config finds no libssl, libcrypto"),
    ("hiredis=0.14.1 hiredis_ssl=0.14.1 libssl=3.0.0 libcrypto=3.0.0",
     "hiredis 0.14.1 is older than 1.0.0"),
])
def test_missing_dependencies_are_named_with_how_to_get_them(fake_pkg_config, modules, named):
    r = run_build_script(fake_pkg_config, modules)
    assert r.returncode != 0
    assert named in r.stderr, r.stderr
    for hint in ("Debian 12", "bookworm-backports", "libhiredict-shims-dev", "libhiredis-dev >= 1.0",
                 "Ubuntu 24.04", "Ubuntu 22.04", "libssl-dev"):
        assert hint in r.stderr, f"{hint!r} missing from: {r.stderr}"


def test_no_pkg_config(tmp_path):
    r = run_build_script(str(tmp_path / "no-such-pkg-config"), GOOD)
    assert r.returncode != 0 and "not found" in r.stderr and "apt-get install pkg-config" in r.stderr


def test_system_lib_without_redlock_pc(fake_pkg_config):
    r = run_build_script(fake_pkg_config, GOOD.replace(" redlock=0.1.0", ""), system_lib=True)
    assert r.returncode != 0 and "finds no redlock.pc" in r.stderr and "PKG_CONFIG_PATH" in r.stderr
