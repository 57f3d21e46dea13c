# GPU architectures for the CUDA code frugal compiles itself: frugal_gpu's CUDA_ARCHITECTURES and
# the -gencode flags that Torch's CMake config adds to CMAKE_CUDA_FLAGS from TORCH_CUDA_ARCH_LIST.
# LibTorch's own kernels are whatever the wheel was built with (scripts/setup.sh picks a wheel that
# covers the GPUs).
#
# In order: FRUGAL_CUDA_ARCHITECTURES when set (CMake's syntax, e.g. 60-real;75); else the GPUs
# scripts/setup.sh found (.venv/.frugal-gpus: compute capabilities as "6.0 7.5") as machine code,
# plus PTX of the newest so that newer GPUs can JIT it; else, without a GPU, sm_75, sm_80, sm_86
# and sm_90 plus PTX. Architectures the nvcc at hand cannot compile are left out, saying so (CUDA
# 13 starts at sm_75: a P100 needs a CUDA 12.x toolkit for frugal's own kernels).
# Sets FRUGAL_CUDA_ARCHS (CMake's syntax) and, unless the environment sets it, TORCH_CUDA_ARCH_LIST.
set(FRUGAL_CUDA_ARCHITECTURES "" CACHE STRING
    "GPU architectures for frugal's kernels (CMake's syntax); empty: the GPUs scripts/setup.sh found")

set(_archs "")
set(_source "the default: no GPU found by scripts/setup.sh")
set(_gpus_file ${CMAKE_SOURCE_DIR}/.venv/.frugal-gpus)
if(FRUGAL_CUDA_ARCHITECTURES)
  set(_source "FRUGAL_CUDA_ARCHITECTURES")
  foreach(a ${FRUGAL_CUDA_ARCHITECTURES})
    string(REGEX MATCH "^[0-9]+" n "${a}")
    list(APPEND _archs ${n})
  endforeach()
elseif(EXISTS ${_gpus_file})
  # Set-up rewrites it when the GPUs change (a notebook's next session may have another one).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_gpus_file})
  file(READ ${_gpus_file} _caps)
  string(REGEX MATCHALL "[0-9]+\\.[0-9]+" _caps "${_caps}")
  foreach(c ${_caps})
    string(REPLACE "." "" n "${c}")
    list(APPEND _archs ${n})
  endforeach()
  if(_archs)
    set(_source "the GPUs scripts/setup.sh found: ${_caps}")
  endif()
endif()
if(NOT _archs)
  set(_archs 75 80 86 90)
endif()
list(REMOVE_DUPLICATES _archs)
list(SORT _archs COMPARE NATURAL)

# What the nvcc at hand compiles: CUDA 13 starts at sm_75, 12.x at sm_50; sm_120 needs 12.8.
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER)
  check_language(CUDA)
endif()
# PyPI's torch for Linux is a CUDA build, and its CMake config stops without a CUDA toolkit ("uses
# CUDA but I cannot find the CUDA libraries"), GPU or not: say what to do instead.
file(GLOB _venv_torch_cuda ${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/torch/lib/libtorch_cuda.so)
if(NOT CMAKE_CUDA_COMPILER AND _venv_torch_cuda AND NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR} AND NOT FRUGAL_PYTHON)
  message(FATAL_ERROR "frugal: .venv's PyTorch is a CUDA build, and LibTorch's CMake config needs a CUDA "
                      "toolkit (nvcc) to build against it, GPU or not, and none is on PATH. Install one "
                      "(NVIDIA's CUDA toolkit in /usr/local/cuda, or put its bin/ on PATH), or set Torch_DIR "
                      "to a CPU-only LibTorch.")
endif()
if(CMAKE_CUDA_COMPILER)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _nvcc ERROR_QUIET)
  string(REGEX MATCH "release ([0-9]+)\\.([0-9]+)" _ "${_nvcc}")
  set(_nvcc_version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  if(_nvcc_version VERSION_GREATER_EQUAL 13.0)
    set(_lo 75)
    set(_hi 121)
  elseif(_nvcc_version VERSION_GREATER_EQUAL 12.8)
    set(_lo 50)
    set(_hi 120)
  elseif(_nvcc_version VERSION_GREATER_EQUAL 11.8)
    set(_lo 50)
    set(_hi 90)
  else()
    set(_lo 35)
    set(_hi 86)
  endif()
  set(_kept "")
  set(_dropped "")
  foreach(n ${_archs})
    if(n LESS _lo OR n GREATER _hi)
      list(APPEND _dropped sm_${n})
    else()
      list(APPEND _kept ${n})
    endif()
  endforeach()
  if(_dropped)
    message(STATUS "frugal: nvcc ${_nvcc_version} cannot compile for ${_dropped} (it compiles sm_${_lo} to sm_${_hi}); "
                   "frugal's GPU kernels leave them out, and GPU decoding there stays on the CPU. "
                   "A CUDA 12.x toolkit (nvcc) compiles them.")
  endif()
  if(NOT _kept)
    set(_kept 75 80 86 90)
  endif()
  set(_archs ${_kept})
endif()

# Machine code for each; the newest also as PTX for GPUs after it.
set(FRUGAL_CUDA_ARCHS "")
set(_torch_list "")
list(GET _archs -1 _newest)
foreach(n ${_archs})
  math(EXPR _major "${n} / 10")
  math(EXPR _minor "${n} % 10")
  list(APPEND _torch_list "${_major}.${_minor}")  # the PTX comes from CUDA_ARCHITECTURES
  if(n EQUAL _newest)
    list(APPEND FRUGAL_CUDA_ARCHS ${n})
  else()
    list(APPEND FRUGAL_CUDA_ARCHS ${n}-real)
  endif()
endforeach()
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  # A normal variable: it shadows the cache entry earlier versions of this file wrote.
  set(TORCH_CUDA_ARCH_LIST "${_torch_list}")
endif()
message(STATUS "frugal: CUDA architectures ${FRUGAL_CUDA_ARCHS} (${_source})")
