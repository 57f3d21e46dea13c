# cifar_fuzz: CIFAR's pickled batches (the unpickler's numpy profile) and record files, as idx.cmake.
add_executable(cifar_fuzz ${CMAKE_CURRENT_LIST_DIR}/cifar_fuzz.cpp)
target_link_libraries(cifar_fuzz PRIVATE frugal_archive frugal_util)
target_include_directories(cifar_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_options(cifar_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(cifar_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(cifar_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
