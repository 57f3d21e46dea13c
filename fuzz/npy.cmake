# npy_fuzz: the .npy header parser and the image/label readers over its result (src/dataset/npy.cpp,
# a private header of the torch-free dataset library, linked).
add_executable(npy_fuzz ${CMAKE_CURRENT_LIST_DIR}/npy_fuzz.cpp)
target_link_libraries(npy_fuzz PRIVATE frugal_dataset)
target_include_directories(npy_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(npy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(npy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(npy_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
