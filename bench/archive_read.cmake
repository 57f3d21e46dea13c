# bench/verify.sh drives this: archive open time and random single-entry reads.
add_executable(archive_read_bench ${CMAKE_CURRENT_LIST_DIR}/archive_read_bench.cpp)
target_link_libraries(archive_read_bench PRIVATE frugal_archive frugal_util PkgConfig::DEFLATE)
set_target_properties(archive_read_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
