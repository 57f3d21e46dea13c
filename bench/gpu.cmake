# GPU benchmarks for scripts/gpu-check.sh (built everywhere, run only where a GPU is).
if(FRUGAL_WITH_TORCH)
  add_executable(gpu_train_step ${CMAKE_CURRENT_LIST_DIR}/gpu_train_step.cpp)
  target_link_libraries(gpu_train_step PRIVATE frugal_train ${TORCH_LIBRARIES})
  target_include_directories(gpu_train_step PRIVATE ${CMAKE_SOURCE_DIR}/src)
  set_target_properties(gpu_train_step PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin
    BUILD_RPATH "${FRUGAL_TORCH_LIB_DIR}")
  frugal_torch_pch(gpu_train_step)
endif()
