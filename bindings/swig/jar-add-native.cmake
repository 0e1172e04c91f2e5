# SPDX-License-Identifier: BSD-3-Clause
# jar-add-native.cmake: adds native/<platform>/libredlockjni.so (the self-contained
# JNI library, under BUNDLE_DIR) to the CMake jar JAR, as the Maven jar carries it,
# so that the jar works on its own. Runs only when the jar or the library is newer
# than STAMP: add_jar rewrites the jar from scratch whenever a class changes.
# cmake -DJAR_TOOL=jar -DJAR=... -DBUNDLE_DIR=... -DLIB=... -DSTAMP=... -P jar-add-native.cmake
foreach(_v JAR_TOOL JAR BUNDLE_DIR LIB STAMP)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "jar-add-native.cmake: ${_v} is not set")
  endif()
endforeach()
if(EXISTS "${STAMP}" AND NOT "${JAR}" IS_NEWER_THAN "${STAMP}" AND NOT "${LIB}" IS_NEWER_THAN "${STAMP}")
  return()
endif()
execute_process(COMMAND "${JAR_TOOL}" uf "${JAR}" -C "${BUNDLE_DIR}" native RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "jar-add-native.cmake: '${JAR_TOOL} uf ${JAR}' failed: ${_rc}")
endif()
file(TOUCH "${STAMP}")
