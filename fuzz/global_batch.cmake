# global_batch_fuzz: the global batch read from a checkpoint's "config" metadata (batch_size,
# accum, world_size), compiled in directly as time_budget.cmake does (no LibTorch).
add_executable(global_batch_fuzz ${CMAKE_CURRENT_LIST_DIR}/global_batch_fuzz.cpp ${PROJECT_SOURCE_DIR}/src/train/global_batch.cpp)
target_link_libraries(global_batch_fuzz PRIVATE nlohmann_json::nlohmann_json)
target_include_directories(global_batch_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(global_batch_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(global_batch_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(global_batch_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
