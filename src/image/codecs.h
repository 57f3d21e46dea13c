// The per-format decoders behind decode_image(); each checks the pixel limit on the header.
#pragma once

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

// Throws Error(invalid) when width*height is above max_pixels.
void check_pixels(int width, int height, std::uint64_t max_pixels, const std::string& where);

}  // namespace frugal::detail
