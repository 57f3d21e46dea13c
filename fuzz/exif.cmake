# exif_fuzz: the EXIF orientation reader (src/image/exif.cpp: JPEG segments, PNG chunks, WebP
# chunks, TIFF and BigTIFF IFDs, XMP) and the orientation of pixels and boxes under libFuzzer.
add_executable(exif_fuzz ${CMAKE_CURRENT_LIST_DIR}/exif_fuzz.cpp)
target_link_libraries(exif_fuzz PRIVATE frugal_image frugal_util)
# src/ for image/codecs.h: orientation_in_tiff and the box mappings are detail functions.
target_include_directories(exif_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(exif_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(exif_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
set_target_properties(exif_fuzz PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
