# webdataset_fuzz: the WebDataset grouping (keys, suffixes, metadata, labels from .cls/.txt/.json)
# over members made from the input, and brace expansion of shard patterns.
add_executable(webdataset_fuzz ${CMAKE_CURRENT_LIST_DIR}/webdataset_fuzz.cpp)
target_link_libraries(webdataset_fuzz PRIVATE frugal_archive frugal_util)
target_compile_options(webdataset_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(webdataset_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(webdataset_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
