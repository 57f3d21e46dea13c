// The per-format decoders behind decode_image(); each checks the pixel limit on the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "frugal/image.h"

namespace frugal::detail {

ImageInfo jpeg_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void jpeg_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out);

ImageInfo png_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void png_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out);

// Which entropy decoder a JPEG region decode uses: `best` is jpeg_huffman.h's where the image
// allows it (libjpeg's when it gives up), `libjpeg` is libjpeg-turbo's own: the reference path.
enum class EntropyDecoder { best, libjpeg };

// The region of a JPEG that covers `box` (full-size pixels), DCT-scaled by
// jpeg_region_scale(box, options.min_width/min_height): decode_jpeg_region in image.h.
JpegRegion jpeg_decode_region(std::span<const std::uint8_t> bytes, const CropBox& box, const DecodeOptions& options,
                              const std::string& where, Image& out, EntropyDecoder which = EntropyDecoder::best);
// The smallest M of 1, 2, 4 with box_w*M/8 >= min_w and box_h*M/8 >= min_h, else 8.
int jpeg_region_scale(int box_w, int box_h, int min_w, int min_h);

// Adobe (inverted) CMYK -> RGB as PIL's convert("RGB"); RGB -> PIL's "L" luma.
void cmyk_to_rgb(const std::uint8_t* in, std::size_t pixels, std::uint8_t* out);
void rgb_to_luma(const std::uint8_t* in, std::size_t pixels, std::uint8_t* out);

// Throws Error(invalid) when width*height is above max_pixels.
void check_pixels(int width, int height, std::uint64_t max_pixels, const std::string& where);

}  // namespace frugal::detail
