# safetensors_fuzz: the torch-free safetensors header parser (src/checkpoint_files/safetensors_header.cpp), which
# every checkpoint and model read goes through first: lengths, offsets, dtype x shape.
add_executable(safetensors_fuzz ${CMAKE_CURRENT_LIST_DIR}/safetensors_fuzz.cpp)
target_link_libraries(safetensors_fuzz PRIVATE frugal_budget frugal_util)
target_compile_options(safetensors_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(safetensors_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(safetensors_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
