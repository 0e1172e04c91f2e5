# SPDX-License-Identifier: BSD-3-Clause
# list-java-sources.cmake: writes the Java files SWIG generated in DIR to OUT
# as a javac @argfile (cmake -DDIR=... -DOUT=... -P list-java-sources.cmake).
file(GLOB _sources "${DIR}/*.java")
if(NOT _sources)
  message(FATAL_ERROR "no SWIG-generated Java sources in ${DIR}")
endif()
list(SORT _sources)
set(_text "")
foreach(_f IN LISTS _sources)
  # javac argfiles take quoted names; backslashes must be doubled inside quotes.
  string(REPLACE "\\" "\\\\" _f "${_f}")
  string(APPEND _text "\"${_f}\"\n")
endforeach()
file(WRITE "${OUT}" "${_text}")
