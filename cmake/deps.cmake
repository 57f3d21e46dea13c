# System libraries come from Debian's packages (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
# libjpeg-turbo's libjpeg API: cropped decoding (jpeg_crop_scanline), which TurboJPEG 2.1 lacks.
pkg_check_modules(JPEG REQUIRED IMPORTED_TARGET libjpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
# Images as they come (src/image): WebP (libwebp; libwebpdemux for an animation's first frame),
# TIFF (libtiff) and GIF (giflib, which ships no .pc file). BMP is read by frugal itself.
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp libwebpdemux)
pkg_check_modules(TIFF REQUIRED IMPORTED_TARGET libtiff-4)
find_package(GIF 5 REQUIRED)
pkg_check_modules(DEFLATE REQUIRED IMPORTED_TARGET libdeflate)
# zlib: streaming gunzip of IDX files, so that output can stop at the declared size (libdeflate
# inflates whole buffers only). Installed with libspng-dev, which depends on it.
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
# xz and bzip2: a compressed tar is recognised by its first decompressed block and, when asked,
# decompressed once (include/frugal/archive/decompress.h). Debian's libbz2-dev has no .pc file.
pkg_check_modules(LZMA REQUIRED IMPORTED_TARGET liblzma)
find_package(BZip2 REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
# RE2 for --label-pattern: linear time in the name matched, no recursion (std::regex overflowed
# the stack on a 36 KB entry name). Debian's libre2-dev ships re2.pc.
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
# Its -pthread would reach every target that links frugal_loader and define _REENTRANT there, which
# the torch precompiled header was built without (it would be skipped); Threads::Threads links it.
set_property(TARGET PkgConfig::RE2 PROPERTY INTERFACE_COMPILE_OPTIONS "")
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Threads REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)

# LibTorch. Order of preference: the user's Torch_DIR; else the PyTorch importable by
# FRUGAL_PYTHON (under `pip install .` the installing Python; else the project's .venv, or a
# notebook's own PyTorch), through torch.utils.cmake_prefix_path.
if(FRUGAL_WITH_TORCH)
  if(NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR})
    if(NOT FRUGAL_PYTHON)
      if(SKBUILD AND Python_EXECUTABLE)
        # `pip install .` (scikit-build-core): the torch of the Python installing us, not .venv's
        # nor the first python3 on PATH (a clean checkout has no .venv).
        set(FRUGAL_PYTHON ${Python_EXECUTABLE})
      elseif(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
        set(FRUGAL_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
      else()
        find_program(FRUGAL_PYTHON NAMES python3 python)
      endif()
    endif()
    execute_process(
      COMMAND ${FRUGAL_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "LibTorch not found: set Torch_DIR, or run scripts/setup.sh to install "
                          "torch into .venv, or configure with -DFRUGAL_WITH_TORCH=OFF")
    endif()
    list(APPEND CMAKE_PREFIX_PATH ${_torch_prefix})
  endif()
  # Without this, Caffe2's config probes the local GPU with a try_run, which fails on machines
  # without one (and with CMake < 3.27 under CUDA 13). The list only matters for CUDA code we
  # compile ourselves; LibTorch's own kernels are whatever the wheel was built with.
  if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "7.5;8.0;8.6;9.0" CACHE STRING "GPU architectures for frugal's CUDA code")
  endif()
  find_package(Torch REQUIRED)
  # Torch's config adds its flags globally through TORCH_CXX_FLAGS (the C++ ABI); keep them.
  set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
  get_filename_component(FRUGAL_TORCH_LIB_DIR "${TORCH_LIBRARY}" DIRECTORY)
  message(STATUS "frugal: LibTorch ${Torch_VERSION} from ${FRUGAL_TORCH_LIB_DIR}")
  # A PyPI torch finds its NVIDIA libraries (NCCL, cuDNN, ...) through its own RPATH into
  # site-packages/nvidia/*/lib, but the linker searches the -rpath folders Torch's config adds
  # (/usr/local/cuda/lib) first: torch 2.15's libtorch_cuda then met the CUDA toolkit's older NCCL
  # and the link failed on ncclCommGrow. -rpath-link is searched before them (link time only).
  file(GLOB _nvidia_libs LIST_DIRECTORIES true "${FRUGAL_TORCH_LIB_DIR}/../../nvidia/*/lib")
  foreach(d ${_nvidia_libs})
    get_filename_component(d "${d}" REALPATH)
    add_link_options("LINKER:-rpath-link,${d}")
  endforeach()
endif()
