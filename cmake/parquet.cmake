# Apache Arrow's C++ parquet reader, from the pyarrow wheel (Debian's stable has no libarrow): its
# headers and versioned shared libraries (libarrow.so.N, libparquet.so.N; the wheel has no
# unversioned names) imported by full path, found by asking FRUGAL_PYTHON's pyarrow where they are.
# FRUGAL_PARQUET=OFF builds without them: parquet DATA is then refused saying so (data_source.h).
if(NOT FRUGAL_PARQUET)
  message(STATUS "frugal: parquet DATA off (FRUGAL_PARQUET=OFF)")
  return()
endif()
if(NOT FRUGAL_PYTHON)
  if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
    set(FRUGAL_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  else()
    find_program(FRUGAL_PYTHON NAMES python3 python)
  endif()
endif()
execute_process(
  COMMAND ${FRUGAL_PYTHON} -c
    "import pyarrow as pa; print(pa.__version__); print(pa.get_include()); print(pa.get_library_dirs()[0]); print(pa.cpp_version_info.major)"
  OUTPUT_VARIABLE _pa_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "parquet DATA needs Apache Arrow's C++ library from the pyarrow wheel, and "
                      "'${FRUGAL_PYTHON} -c \"import pyarrow\"' failed: run scripts/setup.sh (it installs pyarrow "
                      "into .venv), or pip install pyarrow into that python, or configure with -DFRUGAL_PARQUET=OFF "
                      "(parquet DATA is then refused)")
endif()
string(REPLACE "\n" ";" _pa_out "${_pa_out}")
list(GET _pa_out 0 FRUGAL_PYARROW_VERSION)
list(GET _pa_out 1 _pa_include)
list(GET _pa_out 2 FRUGAL_ARROW_LIB_DIR)
list(GET _pa_out 3 _pa_so)
foreach(_lib arrow parquet)
  set(_file ${FRUGAL_ARROW_LIB_DIR}/lib${_lib}.so.${_pa_so}00)
  if(NOT EXISTS ${_file})
    message(FATAL_ERROR "pyarrow ${FRUGAL_PYARROW_VERSION} has no ${_file}: reinstall pyarrow "
                        "(scripts/setup.sh), or configure with -DFRUGAL_PARQUET=OFF")
  endif()
  add_library(Arrow::${_lib} SHARED IMPORTED)
  set_target_properties(Arrow::${_lib} PROPERTIES IMPORTED_LOCATION ${_file} IMPORTED_NO_SONAME OFF
                                                  INTERFACE_INCLUDE_DIRECTORIES ${_pa_include})
endforeach()
set_target_properties(Arrow::parquet PROPERTIES INTERFACE_LINK_LIBRARIES Arrow::arrow)
message(STATUS "frugal: parquet DATA through pyarrow ${FRUGAL_PYARROW_VERSION}'s Arrow (${FRUGAL_ARROW_LIB_DIR})")
