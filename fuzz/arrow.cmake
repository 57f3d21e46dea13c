# arrow_fuzz: the Arrow IPC reader (frugal's walk over the messages, Arrow's flatbuffer verifier and
# record batch reads as frugal drives them, the column choice, class names, batch reads through the
# cache) over any bytes. Arrow itself is the pyarrow wheel's, not instrumented: ASan sees frugal's
# side of every call, and the plugin's.
if(FRUGAL_PARQUET)
  add_executable(arrow_fuzz ${CMAKE_CURRENT_LIST_DIR}/arrow_fuzz.cpp)
  target_link_libraries(arrow_fuzz PRIVATE frugal_archive frugal_util)
  target_include_directories(arrow_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(arrow_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(arrow_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(arrow_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endif()
