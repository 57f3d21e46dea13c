# GPU input pipeline (docs/gpu.md): nvJPEG decoding and the crop/resize/flip/normalise kernel in
# frugal_gpu. Everything here is optional: without nvcc the library still builds (CPU-only, and
# `--decode gpu` says why it cannot run); without nvJPEG the kernel is built but decoding stays
# on the CPU.
#
# Architectures: FRUGAL_CUDA_ARCHS from cmake/cuda_archs.cmake (the GPUs scripts/setup.sh found,
# as machine code, plus PTX of the newest).
option(FRUGAL_WITH_CUDA "Build the GPU input pipeline when nvcc is found" ON)

set(FRUGAL_CUDA OFF)
set(FRUGAL_NVJPEG OFF)
if(FRUGAL_WITH_CUDA AND FRUGAL_WITH_TORCH)  # the GPU pipeline only ever feeds LibTorch
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER)
    check_language(CUDA)
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${FRUGAL_CUDA_ARCHS})
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(FRUGAL_CUDA ON)
    endif()
  endif()
endif()

if(FRUGAL_CUDA)
  # nvJPEG is not in every CUDA toolkit install; scripts/setup.sh puts PyPI's nvidia-nvjpeg into
  # .venv (nvidia/cu13 for CUDA 13 wheels, nvidia/nvjpeg for CUDA 12 ones). FRUGAL_NVJPEG_ROOT
  # (a folder with include/ and lib/) wins.
  file(GLOB _nvjpeg_hints
    ${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/nvidia/cu13
    ${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/nvidia/nvjpeg)
  if(FRUGAL_PYTHON)
    execute_process(COMMAND ${FRUGAL_PYTHON} -c "import site; print(';'.join(site.getsitepackages()))"
      OUTPUT_VARIABLE _sp OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    foreach(d ${_sp})
      list(APPEND _nvjpeg_hints ${d}/nvidia/cu13 ${d}/nvidia/nvjpeg)
    endforeach()
  endif()
  set(_roots ${FRUGAL_NVJPEG_ROOT} $ENV{FRUGAL_NVJPEG_ROOT} ${_nvjpeg_hints} ${CUDAToolkit_LIBRARY_ROOT})
  find_path(NVJPEG_INCLUDE_DIR nvjpeg.h HINTS ${_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(NVJPEG_LIBRARY NAMES nvjpeg libnvjpeg.so.13 libnvjpeg.so.12
    HINTS ${_roots} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  if(NVJPEG_INCLUDE_DIR AND NVJPEG_LIBRARY)
    set(FRUGAL_NVJPEG ON)
    get_filename_component(FRUGAL_NVJPEG_LIB_DIR "${NVJPEG_LIBRARY}" DIRECTORY)
  endif()
endif()
message(STATUS "frugal: GPU pipeline: CUDA ${FRUGAL_CUDA}, nvJPEG ${FRUGAL_NVJPEG} (${NVJPEG_LIBRARY})")

file(GLOB _gpu_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/gpu/*.cpp)
if(FRUGAL_CUDA)
  file(GLOB _gpu_cu CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/gpu/*.cu)
  list(APPEND _gpu_srcs ${_gpu_cu})
endif()
add_library(frugal_gpu STATIC ${_gpu_srcs})
target_include_directories(frugal_gpu PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR}/include)
frugal_private_includes(frugal_gpu gpu)
target_link_libraries(frugal_gpu PUBLIC frugal_image frugal_util Threads::Threads)
frugal_warnings(frugal_gpu)
if(FRUGAL_CUDA)
  # C++17 for nvcc: CMake 3.25 does not know nvcc 13's C++20 flag; the .cu files need no more.
  set_target_properties(frugal_gpu PROPERTIES CUDA_ARCHITECTURES "${FRUGAL_CUDA_ARCHS}" CUDA_STANDARD 17)
  target_compile_definitions(frugal_gpu PUBLIC FRUGAL_WITH_CUDA=1)
  # The runtime API only: libcuda comes from the driver at run time, never from the toolkit's stub.
  target_link_libraries(frugal_gpu PUBLIC CUDA::cudart)
endif()
if(FRUGAL_NVJPEG)
  add_library(frugal_nvjpeg SHARED IMPORTED)
  set_target_properties(frugal_nvjpeg PROPERTIES IMPORTED_LOCATION "${NVJPEG_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NVJPEG_INCLUDE_DIR}")
  target_compile_definitions(frugal_gpu PUBLIC FRUGAL_WITH_NVJPEG=1)
  target_link_libraries(frugal_gpu PUBLIC frugal_nvjpeg)
  # Executables find libnvjpeg.so.13 where CMake found it (.venv), ahead of the system's.
  set(CMAKE_BUILD_RPATH ${CMAKE_BUILD_RPATH} ${FRUGAL_NVJPEG_LIB_DIR})
  set(CMAKE_INSTALL_RPATH ${CMAKE_INSTALL_RPATH} ${FRUGAL_NVJPEG_LIB_DIR})
endif()
