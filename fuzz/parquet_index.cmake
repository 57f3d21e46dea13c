# parquet_index_fuzz: the parquet index cache's reader (src/archive/parquet_index_cache.cpp) over any
# bytes given as a cache file, and its bytes written and read back. Needs no Arrow: the cache is
# read before the parquet file's images are, and without them. scripts/fuzz.sh builds it with the
# whole tree instrumented.
add_executable(parquet_index_fuzz ${CMAKE_CURRENT_LIST_DIR}/parquet_index_fuzz.cpp)
target_link_libraries(parquet_index_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(parquet_index_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(parquet_index_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(parquet_index_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(parquet_index_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
