# torch.distributed (c10d) in frugal_train: src/train/distributed.cpp includes c10d's
# ProcessGroupGloo and, with a CUDA LibTorch, ProcessGroupNCCL. The PyPI wheel compiles Gloo and
# NCCL in and ships c10d's headers, but neither Gloo's headers (Debian's libgloo-dev has them;
# scripts/setup.sh installs it) nor NCCL's (the nvidia-nccl package in .venv has them).
# The defines c10d's headers need go on that one file only, outside the unity build and the
# shared precompiled header (whose flags every other file must match).
find_path(FRUGAL_GLOO_INCLUDE_DIR gloo/config.h)
if(NOT FRUGAL_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo's headers not found (gloo/config.h): install Debian's libgloo-dev "
                      "(scripts/setup.sh does), or set FRUGAL_GLOO_INCLUDE_DIR")
endif()
set(_dist_src ${CMAKE_SOURCE_DIR}/src/train/distributed.cpp)
set(_dist_defs USE_C10D_GLOO)
set(_dist_includes)
if(NOT FRUGAL_GLOO_INCLUDE_DIR STREQUAL "/usr/include")  # -I/usr/include breaks libstdc++'s #include_next
  list(APPEND _dist_includes ${FRUGAL_GLOO_INCLUDE_DIR})
endif()
set(FRUGAL_NCCL OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  get_filename_component(_site ${FRUGAL_TORCH_LIB_DIR}/../.. ABSOLUTE)
  find_path(FRUGAL_NCCL_INCLUDE_DIR nccl.h HINTS ${_site}/nvidia/nccl/include)
  if(FRUGAL_NCCL_INCLUDE_DIR)
    set(FRUGAL_NCCL ON)
    list(APPEND _dist_defs USE_C10D_NCCL FRUGAL_WITH_NCCL)
    list(APPEND _dist_includes ${FRUGAL_NCCL_INCLUDE_DIR})
  else()
    message(WARNING "frugal: NCCL's headers (nccl.h) not found: several GPUs cannot train together; "
                    "pip install nvidia-nccl-cu13 into the Python that has torch, or set FRUGAL_NCCL_INCLUDE_DIR")
  endif()
endif()
set_source_files_properties(${_dist_src} PROPERTIES
  COMPILE_DEFINITIONS "${_dist_defs}"
  INCLUDE_DIRECTORIES "${_dist_includes}"
  SKIP_PRECOMPILE_HEADERS ON
  SKIP_UNITY_BUILD_INCLUSION ON)
if(FRUGAL_NCCL)
  message(STATUS "frugal: torch.distributed backends: gloo, nccl")
else()
  message(STATUS "frugal: torch.distributed backends: gloo")
endif()
