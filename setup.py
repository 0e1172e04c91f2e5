# SPDX-License-Identifier: BSD-3-Clause
# Packaging of the Python binding: the pure-Python package in bindings/python/redlock plus the cffi
# extension redlock._redlock built by bindings/python/redlock_build.py (see docs/python.md).
import os
import re

from setuptools import setup

ROOT = os.path.dirname(os.path.abspath(__file__))
# Setuptools' intermediate files: build/python beside CMake's, or $REDLOCK_PY_BUILD_DIR, so that
# parallel builds (a wheel, a test venv) need not share one folder. egg_info wants it to exist.
BUILD_BASE = os.environ.get("REDLOCK_PY_BUILD_DIR") or os.path.join("build", "python")
os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)


def c_version() -> str:
    # One version source: the REDLOCK_VERSION_* macros of the public header.
    with open(os.path.join(ROOT, "c", "include", "redlock.h"), encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(rf"#define\s+REDLOCK_VERSION_{p}\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise RuntimeError("REDLOCK_VERSION_MAJOR/MINOR/PATCH not found in c/include/redlock.h")
    return ".".join(m.group(1) for m in parts)


setup(
    # "redlock" is taken on PyPI; the import name stays redlock.
    name="libredlock",
    version=c_version(),
    description="Redlock distributed locks over N Redis/Valkey nodes, a thin binding of the libredlock C core",
    long_description=open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    if os.path.exists(os.path.join(ROOT, "docs", "python.md")) else "",
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.9",
    package_dir={"": "bindings/python"},
    packages=["redlock"],
    package_data={"redlock": ["py.typed", "*.pyi"]},
    install_requires=["cffi>=1.15"],
    # redlock.otel: OpenTelemetry metrics from the metrics hook (docs/observability.md).
    extras_require={"otel": ["opentelemetry-api>=1.23"]},
    cffi_modules=["bindings/python/redlock_build.py:ffibuilder"],
    zip_safe=False,
    # Intermediate files in build/python, beside CMake's and out of the source folders.
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    classifiers=[
        "License :: OSI Approved :: BSD License",
        "Programming Language :: Python :: 3",
        "Programming Language :: C",
        "Operating System :: POSIX",
        "Topic :: Database",
        "Typing :: Typed",
    ],
)
