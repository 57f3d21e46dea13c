# zip_fuzz: the zip parser and reader under libFuzzer. scripts/fuzz.sh configures the whole build
# with -fsanitize=fuzzer-no-link,address,undefined so that frugal_archive is instrumented too.
add_executable(zip_fuzz ${CMAKE_CURRENT_LIST_DIR}/zip_fuzz.cpp)
target_link_libraries(zip_fuzz PRIVATE frugal_archive frugal_util)
target_compile_options(zip_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(zip_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(zip_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
