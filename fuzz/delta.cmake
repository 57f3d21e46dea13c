# delta_fuzz: a delta checkpoint's metadata, torch-free: "delta_index" (parse_delta_index) and
# "base" (delta_base_path, which must never leave the delta's folder).
add_executable(delta_fuzz ${CMAKE_CURRENT_LIST_DIR}/delta_fuzz.cpp)
target_link_libraries(delta_fuzz PRIVATE frugal_budget frugal_util)
target_compile_options(delta_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(delta_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(delta_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
