# labels_fuzz: the labels.csv parser (src/dataset/labels_csv.cpp), linked from the torch-free dataset
# library.
add_executable(labels_fuzz ${CMAKE_CURRENT_LIST_DIR}/labels_fuzz.cpp)
target_link_libraries(labels_fuzz PRIVATE frugal_dataset)
target_include_directories(labels_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(labels_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(labels_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(labels_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
