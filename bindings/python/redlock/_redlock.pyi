# Type stub of the cffi extension module built by bindings/python/redlock_build.py.
from typing import Any

ffi: Any
lib: Any
