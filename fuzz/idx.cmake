# idx_fuzz: the IDX (MNIST) parser with its gunzip under libFuzzer, as zip.cmake.
add_executable(idx_fuzz ${CMAKE_CURRENT_LIST_DIR}/idx_fuzz.cpp)
target_link_libraries(idx_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(idx_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(idx_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(idx_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(idx_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
