# labels_fuzz: the labels.csv parser (src/data/labels_csv.cpp), compiled in directly for the same
# reason as npy.cpp in npy.cmake: the data library needs LibTorch, the parser does not.
add_executable(labels_fuzz ${CMAKE_CURRENT_LIST_DIR}/labels_fuzz.cpp ${PROJECT_SOURCE_DIR}/src/data/labels_csv.cpp)
target_link_libraries(labels_fuzz PRIVATE frugal_util)
target_include_directories(labels_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(labels_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(labels_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(labels_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
