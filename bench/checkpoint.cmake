# Checkpoint save time/size, background-save stall and delta ratios (bench/checkpoint.sh).
if(FRUGAL_WITH_TORCH)
  add_executable(checkpoint_bench ${CMAKE_CURRENT_LIST_DIR}/checkpoint_bench.cpp)
  target_link_libraries(checkpoint_bench PRIVATE frugal_checkpoint frugal_models ${TORCH_LIBRARIES})
  set_target_properties(checkpoint_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin
    BUILD_RPATH "${FRUGAL_TORCH_LIB_DIR}")
  frugal_torch_pch(checkpoint_bench)
endif()
