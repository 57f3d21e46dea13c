# label_sources_fuzz: the --labels CSV/TSV reader with --label-columns, and --class-names files
# (src/dataset/label_sources.cpp), linked from the torch-free dataset library.
add_executable(label_sources_fuzz ${CMAKE_CURRENT_LIST_DIR}/label_sources_fuzz.cpp)
target_link_libraries(label_sources_fuzz PRIVATE frugal_dataset)
target_include_directories(label_sources_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(label_sources_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(label_sources_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(label_sources_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
