# config_fuzz: `frugal train --config`'s TOML reader (tools/frugal/config_file.cpp, torch-free,
# compiled in directly since it belongs to the frugal-torch executable). toml++ is the system's,
# uninstrumented.
add_executable(config_fuzz ${CMAKE_CURRENT_LIST_DIR}/config_fuzz.cpp ${PROJECT_SOURCE_DIR}/tools/frugal/config_file.cpp)
target_link_libraries(config_fuzz PRIVATE frugal_util PkgConfig::TOMLPP)
target_include_directories(config_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/tools/frugal)
target_compile_options(config_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(config_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(config_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
