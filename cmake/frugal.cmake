# frugal_warnings(TARGET): -Wall -Wextra on frugal's own code, and -Werror where FRUGAL_WERROR is on
# (CI: .ci/run), so that a warning fails the change that adds it instead of piling up.
function(frugal_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  if(FRUGAL_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# frugal_library(NAME [TORCH] [DIR SUBDIR] DEPS ...): a static library from src/NAME/*.cpp (or
# src/SUBDIR/*.cpp: a library in a folder not named after it; none is now), public headers from
# include/, private ones from its own folder only (frugal_private_includes).
function(frugal_library name)
  cmake_parse_arguments(ARG "TORCH" "DIR" "DEPS" ${ARGN})
  if(NOT ARG_DIR)
    set(ARG_DIR ${name})
  endif()
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${ARG_DIR}/*.cpp)
  if(NOT _srcs)  # a subsystem that has no code yet still links
    set(_srcs ${CMAKE_BINARY_DIR}/empty_${name}.cpp)
    file(WRITE ${_srcs} "")
  endif()
  add_library(frugal_${name} STATIC ${_srcs})
  target_include_directories(frugal_${name}
    PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR}/include)
  frugal_private_includes(frugal_${name} ${ARG_DIR})
  target_link_libraries(frugal_${name} PUBLIC ${ARG_DEPS} Threads::Threads)
  frugal_warnings(frugal_${name})
  if(ARG_TORCH)
    target_link_libraries(frugal_${name} PUBLIC ${TORCH_LIBRARIES})
    frugal_torch_pch(frugal_${name})
    frugal_torch_unity(frugal_${name})
  endif()
endfunction()

# frugal_private_includes(TARGET DIR): TARGET's private include path is src/DIR and nothing else of
# src/, so another library's private header does not compile ("gpu/plan.h" in data: make it public
# in include/frugal/ instead; CONTRIBUTING.md, scripts/check_includes.py). The sources keep naming
# their own private headers "DIR/x.h": the path is a folder of the build holding one link,
# DIR -> src/DIR. Tests, benchmarks and fuzz targets may still see all of src/.
function(frugal_private_includes target dir)
  set(_root ${CMAKE_BINARY_DIR}/private/${target})
  get_filename_component(_parent ${_root}/${dir} DIRECTORY)
  file(MAKE_DIRECTORY ${_parent})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${dir} ${_root}/${dir} SYMBOLIC)
  target_include_directories(${target} PRIVATE ${_root})
endfunction()

# Files that include <torch/torch.h> cost ~20-30 s each; one precompiled header serves them all,
# one per kind of code: libraries and the Python module are position-independent (-fPIC: they are
# linked into a shared object), executables are PIE (-fPIE), and a PCH is only valid for the kind
# it was made for.
function(frugal_torch_pch target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    set(_holder frugal_torch_pch_holder_exe)
    set(_file torch_pch_holder_exe.cpp)
  else()
    set(_holder frugal_torch_pch_holder)
    set(_file torch_pch_holder.cpp)
  endif()
  if(NOT TARGET ${_holder})
    file(WRITE ${CMAKE_BINARY_DIR}/${_file} "// precompiled torch header holder\n")
    if(_type STREQUAL "EXECUTABLE")
      add_library(${_holder} OBJECT ${CMAKE_BINARY_DIR}/${_file})
      set_target_properties(${_holder} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${_holder} PRIVATE -fPIE)
    else()
      add_library(${_holder} STATIC ${CMAKE_BINARY_DIR}/${_file})
    endif()
    target_link_libraries(${_holder} PUBLIC ${TORCH_LIBRARIES})
    target_precompile_headers(${_holder} PRIVATE <torch/torch.h>)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${_holder})
endfunction()

# Files that include LibTorch spend most of their compile time instantiating the same templates
# and writing their debug info; compiled as one file per library they take a third of the CPU time
# (src/checkpoint: 28 s instead of 96 s). Off by default, so that editing one file recompiles one
# file; the Makefile turns it on for the build folders it creates (a first build, CI).
option(FRUGAL_UNITY_BUILD "Compile each LibTorch library as one file (faster first build)" OFF)
# A file whose file-local names (anonymous namespace, static) clash with another file's of its
# library stays out of the combined file: "redefinition of 'frugal::{anonymous}::...'" in
# Unity/unity_0_cxx.cxx names both.
set(FRUGAL_UNITY_EXCLUDE src/loader/gpu_loader.cpp)
function(frugal_torch_unity target)
  if(FRUGAL_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
    foreach(f ${FRUGAL_UNITY_EXCLUDE})
      set_source_files_properties(${CMAKE_SOURCE_DIR}/${f} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endforeach()
  endif()
endfunction()

# Tests were half of a first build's CPU time (5,200 of 9,500 s on 2 cores): a test file that
# includes LibTorch took 45-65 s, most of it instantiating the same templates as its neighbours
# and writing debug info. With FRUGAL_UNITY_BUILD a test executable's files compile as one
# (tests/checkpoint, 5 files: 38 s instead of 137 s; so test files keep their file-local names
# apart), and without FRUGAL_TEST_DEBUG_INFO they compile without -g (45 s -> 28 s a file); the
# libraries they test keep theirs. -DFRUGAL_TEST_DEBUG_INFO=ON to step through a test in gdb.
option(FRUGAL_TEST_DEBUG_INFO "Compile the tests with debug info (-g), as the libraries are" OFF)

# frugal_test(NAME SOURCES... DEPS ...): a GoogleTest executable registered with CTest.
function(frugal_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  if(FRUGAL_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
  if(NOT FRUGAL_TEST_DEBUG_INFO)
    target_compile_options(${name} PRIVATE -g0)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    FRUGAL_SOURCE_DIR="${CMAKE_SOURCE_DIR}" FRUGAL_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "FRUGAL_SOURCE_DIR=${CMAKE_SOURCE_DIR};FRUGAL_BINARY_DIR=${CMAKE_BINARY_DIR};FRUGAL_PYTHON=${FRUGAL_TEST_PYTHON};PATH=${CMAKE_BINARY_DIR}/bin:$ENV{PATH}")
endfunction()
