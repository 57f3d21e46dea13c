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

// Where a crop box lies in a reduced PNG region (png_decode_reduced): out's pixel (i, j) is the
// mean of the source block [(first_x + i) * factor, ...+ factor) x [(first_y + j) * factor, ...),
// blocks aligned to the image's origin and cut at its right and bottom edges.
struct ReducedRegion {
  int factor = 1;
  int first_x = 0, first_y = 0;            // the first block, in blocks
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;   // the box, in out's pixel coordinates
};

// PNG decoding with memory bounded by the output: the rows are decoded one at a time (libspng's
// progressive decoding, Adam7 passes too) and only the blocks of factor x factor pixels covering
// `box` are kept, each as its mean (an area-average reduction, as the JPEG path's DCT scaling
// reduces), so `out` is about (box / factor) pixels whatever the image's size or bit depth (16-bit
// samples are read as their high byte, as png_decode does). Every row is decoded, so a damaged
// file fails whichever box is asked. Channels and the pixel limit as png_decode; Error(usage) for
// a box outside the image or a factor below 1.
ReducedRegion png_decode_reduced(std::span<const std::uint8_t> bytes, const CropBox& box, int factor,
                                 const DecodeOptions& options, const std::string& where, Image& out);

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
