# decompress_fuzz: the decoders behind --cache-decompressed (xz above all: several streams, each
# with its own dictionary; gzip, zstd and bzip2 by their magic bytes) over any bytes, with their
# memory limits: scripts/fuzz.sh's -rss_limit_mb=2048 (libFuzzer's -malloc_limit_mb follows it)
# fails any allocation over the 2 GiB dictionary or window that decompress.h allows, as a decoder
# without the limit makes for the seed whose second xz stream declares a 4 GiB dictionary.
add_executable(decompress_fuzz ${CMAKE_CURRENT_LIST_DIR}/decompress_fuzz.cpp)
target_link_libraries(decompress_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(decompress_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(decompress_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(decompress_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(decompress_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
