# time_budget_fuzz: a checkpoint's "time_budget" metadata (TimeBudget::resume, Schedule::from_json),
# from the torch-free budget library.
add_executable(time_budget_fuzz ${CMAKE_CURRENT_LIST_DIR}/time_budget_fuzz.cpp)
target_link_libraries(time_budget_fuzz PRIVATE frugal_budget)
target_compile_options(time_budget_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(time_budget_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(time_budget_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
