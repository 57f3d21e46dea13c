# Train-step throughput of frugal's TrainStep against eager PyTorch (bench/train_step.sh).
if(FRUGAL_WITH_TORCH)
  add_executable(train_step_bench ${CMAKE_CURRENT_LIST_DIR}/train_step_bench.cpp)
  target_link_libraries(train_step_bench PRIVATE frugal_train ${TORCH_LIBRARIES})
  target_include_directories(train_step_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
  set_target_properties(train_step_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin
    BUILD_RPATH "${FRUGAL_TORCH_LIB_DIR}")
  frugal_torch_pch(train_step_bench)
endif()
