# tar_fuzz: the tar index (headers, GNU long names, PAX records, sparse maps), reads of what it
# indexed, the WebDataset grouping over it, and the index cache's parser. scripts/fuzz.sh builds it
# with the whole tree instrumented.
add_executable(tar_fuzz ${CMAKE_CURRENT_LIST_DIR}/tar_fuzz.cpp)
target_link_libraries(tar_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(tar_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(tar_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(tar_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(tar_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
