# bench/loader.sh's baseline: full-size TurboJPEG decoding of an archive's JPEGs.
add_executable(tj_full_decode ${CMAKE_CURRENT_SOURCE_DIR}/tj_full_decode.cpp)
target_link_libraries(tj_full_decode PRIVATE frugal_archive frugal_image frugal_util PkgConfig::TURBOJPEG Threads::Threads)
set_target_properties(tj_full_decode PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
