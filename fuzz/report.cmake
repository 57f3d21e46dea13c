# report_fuzz: frugal report's readers of a run folder's record (src/report/run_history.cpp: a
# TensorBoard events file, metrics.jsonl's lines) and the page over what they read
# (src/report/render.cpp), linked from the torch-free report library.
add_executable(report_fuzz ${CMAKE_CURRENT_LIST_DIR}/report_fuzz.cpp)
target_link_libraries(report_fuzz PRIVATE frugal_report)
target_compile_options(report_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(report_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(report_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
