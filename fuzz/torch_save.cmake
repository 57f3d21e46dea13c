# torch_save_fuzz: frugal's data-only unpickler and the torch.save zip around it (src/weights/): any
# bytes either describe tensors lying inside their storages, or fail with frugal::Error; never a
# crash, a call, a recursion or an unbounded allocation.
add_executable(torch_save_fuzz ${CMAKE_CURRENT_LIST_DIR}/torch_save_fuzz.cpp)
target_link_libraries(torch_save_fuzz PRIVATE frugal_weights frugal_archive frugal_util)
target_include_directories(torch_save_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(torch_save_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(torch_save_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(torch_save_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
