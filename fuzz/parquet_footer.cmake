# parquet_footer_fuzz: the walk of a parquet footer's Thrift bytes (src/archive/parquet_footer.cpp)
# over any bytes, and, with the parquet plugin built, Arrow's parse of every footer the walk lets
# through: what Arrow allocates for an accepted footer must stay within the walk's bound (issue 47:
# a 3 MB footer took 725 MB; fuzz/parquet_footer.options caps its allocations). The input is the
# footer alone; the target wraps it into a file.
add_executable(parquet_footer_fuzz ${CMAKE_CURRENT_LIST_DIR}/parquet_footer_fuzz.cpp)
target_link_libraries(parquet_footer_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(parquet_footer_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(parquet_footer_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(parquet_footer_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(parquet_footer_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
