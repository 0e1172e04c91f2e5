# SPDX-License-Identifier: BSD-3-Clause
# nupkg-test.cmake: the .nupkg alone. Unzips NUPKG into an empty DIR, checks
# that its native library needs nothing but libc's own libraries, and runs the
# test program's basic and async groups with only the package's directories
# on the assembly and library paths, on 5 fresh nodes.
# cmake -DNUPKG= -DDIR= -DEXE= -DMONO= -DPYTHON= -DHARNESS= -DREADELF= -P nupkg-test.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${NUPKG} WORKING_DIRECTORY ${DIR} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "cannot unzip ${NUPKG}")
endif()
set(_native ${DIR}/runtimes/linux-x64/native)
set(_lib ${DIR}/lib/netstandard2.0)
foreach(_f ${_native}/libredlock_csharp.so ${_lib}/Redlock.Native.dll ${DIR}/Redlock.Native.nuspec)
  if(NOT EXISTS ${_f})
    message(FATAL_ERROR "the package has no ${_f}")
  endif()
endforeach()
execute_process(COMMAND ${READELF} -d ${_native}/libredlock_csharp.so OUTPUT_VARIABLE _dyn)
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]+\\]" _needed "${_dyn}")
foreach(_n IN LISTS _needed)
  string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" _n "${_n}")
  if(NOT _n MATCHES "^(libc\\.so|libm\\.so|libpthread\\.so|libdl\\.so|librt\\.so|ld-linux)")
    message(FATAL_ERROR "the package's libredlock_csharp.so needs ${_n}")
  endif()
endforeach()
# The test program next to the assembly, as an application would have it.
file(COPY ${EXE} DESTINATION ${_lib})
get_filename_component(_exe_name ${EXE} NAME)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=MONO_PATH LD_LIBRARY_PATH=${_native}
          ${PYTHON} ${HARNESS} exec --count 5 --kind mixed -- ${MONO} ${_lib}/${_exe_name} basic async
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the test program failed with the package alone")
endif()
