# manifest_fuzz: the split manifest parser under libFuzzer, as zip.cmake.
add_executable(manifest_fuzz ${CMAKE_CURRENT_LIST_DIR}/manifest_fuzz.cpp)
target_link_libraries(manifest_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(manifest_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(manifest_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(manifest_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(manifest_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
