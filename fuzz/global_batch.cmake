# global_batch_fuzz: the global batch read from a checkpoint's "config" metadata (batch_size,
# accum, world_size), from the torch-free training library.
add_executable(global_batch_fuzz ${CMAKE_CURRENT_LIST_DIR}/global_batch_fuzz.cpp)
target_link_libraries(global_batch_fuzz PRIVATE frugal_training)
target_compile_options(global_batch_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(global_batch_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(global_batch_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
