# npy_fuzz: the .npy header parser and the image/label readers over its result (src/data/npy.cpp).
# The data library is built only with LibTorch, which the fuzz build leaves out; npy.cpp needs no
# torch, so it is compiled into the target directly.
add_executable(npy_fuzz ${CMAKE_CURRENT_LIST_DIR}/npy_fuzz.cpp ${PROJECT_SOURCE_DIR}/src/data/npy.cpp)
target_link_libraries(npy_fuzz PRIVATE frugal_util)
target_include_directories(npy_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(npy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(npy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(npy_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
