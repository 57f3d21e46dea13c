# image_fuzz: the JPEG/PNG decoders and the decode+transform path under libFuzzer (torch-free).
# scripts/fuzz.sh configures the whole build with -fsanitize=fuzzer-no-link,address,undefined so
# that frugal_image is instrumented too (libturbojpeg and libspng are the system's, uninstrumented).
add_executable(image_fuzz ${CMAKE_CURRENT_LIST_DIR}/image_fuzz.cpp)
target_link_libraries(image_fuzz PRIVATE frugal_image frugal_util)
# src/ for image/codecs.h: the region decoder is also run with libjpeg's own entropy decoder.
target_include_directories(image_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(image_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(image_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(image_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
