# The Python front end (python/, docs/python.md): frugal._core, a thin pybind11 binding over the
# same libraries the CLI links, built against the torch of FRUGAL_PYTHON (the Python it is
# installed into: `make python`, or `pip install --no-build-isolation .` through scikit-build-core)
# and never a second LibTorch. pybind11 is torch's own copy (torch/include/pybind11), so tensors
# cross the seam through torch's type casters (libtorch_python).
#
# The libraries it links are static; a Python extension is a shared object, so they are compiled
# as position-independent code (CMAKE_POSITION_INDEPENDENT_CODE in the top CMakeLists.txt).
option(FRUGAL_PYTHON_MODULE "Build the Python package frugal (python/)" ON)
if(NOT FRUGAL_PYTHON_MODULE OR NOT FRUGAL_WITH_TORCH)
  return()
endif()
if(SKBUILD)  # scikit-build-core: the Python whose torch we build against is the one installing us
  set(_py ${Python_EXECUTABLE})
elseif(FRUGAL_PYTHON)
  set(_py ${FRUGAL_PYTHON})
endif()
set(Python_EXECUTABLE ${_py})
find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
if(NOT Python_Development.Module_FOUND)
  message(WARNING "frugal: no Python headers for ${_py} (Debian: apt-get install python3-dev); "
                  "the Python package is not built")
  return()
endif()
find_library(FRUGAL_TORCH_PYTHON_LIBRARY torch_python PATHS ${FRUGAL_TORCH_LIB_DIR} NO_DEFAULT_PATH)
if(NOT FRUGAL_TORCH_PYTHON_LIBRARY)
  message(WARNING "frugal: ${FRUGAL_TORCH_LIB_DIR} has no libtorch_python (a LibTorch without Python?); "
                  "the Python package is not built")
  return()
endif()

set(FRUGAL_PY_OUT ${CMAKE_BINARY_DIR}/python/frugal)
Python_add_library(frugal_python MODULE WITH_SOABI ${CMAKE_SOURCE_DIR}/python/src/core.cpp)
target_link_libraries(frugal_python PRIVATE frugal_train frugal_archive frugal_util ${FRUGAL_TORCH_PYTHON_LIBRARY})
target_include_directories(frugal_python PRIVATE ${TORCH_INCLUDE_DIRS})
target_compile_definitions(frugal_python PRIVATE TORCH_EXTENSION_NAME=_core)
frugal_warnings(frugal_python)
frugal_torch_pch(frugal_python)
# torch's libraries are loaded by `import torch` before ours (frugal/__init__.py imports torch
# first); the RPATH is for what they do not cover (nvJPEG from the same site-packages).
set(_core_rpath "$ORIGIN/../torch/lib")
if(FRUGAL_NVJPEG_LIB_DIR MATCHES "site-packages/(.*)$")  # nvJPEG of an NVIDIA wheel (nvidia/cu13/lib)
  string(APPEND _core_rpath ";$ORIGIN/../${CMAKE_MATCH_1}")
endif()
set_target_properties(frugal_python PROPERTIES OUTPUT_NAME _core LIBRARY_OUTPUT_DIRECTORY ${FRUGAL_PY_OUT}
  INSTALL_RPATH "${_core_rpath}" BUILD_WITH_INSTALL_RPATH OFF)

# The package's Python files beside the module in the build tree (tests put build/python on
# sys.path), and what it was built against, which frugal/__init__.py holds the running torch to.
file(GLOB _py_files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/frugal/*.py)
set(_py_copies)
foreach(f ${_py_files})
  get_filename_component(_n ${f} NAME)
  add_custom_command(OUTPUT ${FRUGAL_PY_OUT}/${_n} COMMAND ${CMAKE_COMMAND} -E copy ${f} ${FRUGAL_PY_OUT}/${_n}
                     DEPENDS ${f} VERBATIM)
  list(APPEND _py_copies ${FRUGAL_PY_OUT}/${_n})
endforeach()
set(FRUGAL_BUILT_TORCH ${Torch_VERSION})
execute_process(COMMAND ${Python_EXECUTABLE} -c "import torch; print(torch.__version__)"
                OUTPUT_VARIABLE FRUGAL_BUILT_TORCH OUTPUT_STRIP_TRAILING_WHITESPACE)
configure_file(${CMAKE_SOURCE_DIR}/python/build_info.py.in ${FRUGAL_PY_OUT}/_build_info.py @ONLY)
add_custom_target(frugal_python_files ALL DEPENDS ${_py_copies})
add_dependencies(frugal_python frugal_python_files)
message(STATUS "frugal: Python package for ${Python_EXECUTABLE} (torch ${FRUGAL_BUILT_TORCH})")

if(SKBUILD)
  install(TARGETS frugal_python LIBRARY DESTINATION frugal)
  install(FILES ${_py_files} ${FRUGAL_PY_OUT}/_build_info.py DESTINATION frugal)
  if(TARGET frugal_arrow_parquet)
    install(TARGETS frugal_arrow_parquet LIBRARY DESTINATION frugal)
  endif()
  # The `frugal` and `frugal-torch` entry points (pyproject.toml): an install from source runs the
  # programs of the build it came from; a binary wheel (scripts/make_wheel.sh) carries its own.
  install(FILES ${CMAKE_SOURCE_DIR}/python/_frugal_launcher.py DESTINATION .)
endif()
