# parquet_fuzz: the parquet reader (Arrow's footer and page parsing as frugal drives it, the column
# choice, the huggingface metadata's class names, row-group reads through the cache) over any bytes.
# Arrow itself is the pyarrow wheel's, not instrumented: ASan sees frugal's side of every call.
if(FRUGAL_PARQUET)
  add_executable(parquet_fuzz ${CMAKE_CURRENT_LIST_DIR}/parquet_fuzz.cpp)
  target_link_libraries(parquet_fuzz PRIVATE frugal_archive frugal_util)
  target_include_directories(parquet_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(parquet_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(parquet_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(parquet_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endif()
