# SPDX-License-Identifier: BSD-3-Clause
# The C core's sources and compile flags, read from c/sources.txt and c/cflags.txt: the files
# the Python and Go builds read too (docs/design.md, "One compilation"). Sets
#   REDLOCK_COMMON_SOURCES  the c/common sources (compiled into libredlock and the CLI)
#   REDLOCK_SOURCES         every other source of the core
#   REDLOCK_CORE_DEFINES    the -D flags, without the -D
#   REDLOCK_CORE_OPTIONS    every other flag
# Run as a script ('cmake -P cmake/core.cmake'), it prints these lists, one item a line, for
# tools/build-flags-check.
get_filename_component(_redlock_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

function(_redlock_read_list file out)
  file(STRINGS "${_redlock_root}/${file}" _lines)
  set(_items "")
  foreach(_line IN LISTS _lines)
    string(STRIP "${_line}" _line)
    if(_line STREQUAL "" OR _line MATCHES "^#")
      continue()
    endif()
    if(_line MATCHES "[ \t;]")
      message(FATAL_ERROR "${file}: one item a line, without blanks: '${_line}'")
    endif()
    list(APPEND _items "${_line}")
  endforeach()
  set(${out} "${_items}" PARENT_SCOPE)
endfunction()

_redlock_read_list(c/sources.txt _redlock_all_sources)
_redlock_read_list(c/cflags.txt _redlock_all_flags)
# Editing either file reconfigures the build.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    "${_redlock_root}/c/sources.txt" "${_redlock_root}/c/cflags.txt")
endif()

set(REDLOCK_COMMON_SOURCES "")
set(REDLOCK_SOURCES "")
foreach(_src IN LISTS _redlock_all_sources)
  if(_src MATCHES "^c/common/")
    list(APPEND REDLOCK_COMMON_SOURCES "${_src}")
  else()
    list(APPEND REDLOCK_SOURCES "${_src}")
  endif()
endforeach()

set(REDLOCK_CORE_DEFINES "")
set(REDLOCK_CORE_OPTIONS "")
foreach(_flag IN LISTS _redlock_all_flags)
  if(_flag MATCHES "^-D(.+)$")
    list(APPEND REDLOCK_CORE_DEFINES "${CMAKE_MATCH_1}")
  else()
    list(APPEND REDLOCK_CORE_OPTIONS "${_flag}")
  endif()
endforeach()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  foreach(_src IN LISTS REDLOCK_COMMON_SOURCES REDLOCK_SOURCES)
    message("source ${_src}")
  endforeach()
  foreach(_def IN LISTS REDLOCK_CORE_DEFINES)
    message("flag -D${_def}")
  endforeach()
  foreach(_opt IN LISTS REDLOCK_CORE_OPTIONS)
    message("flag ${_opt}")
  endforeach()
endif()
