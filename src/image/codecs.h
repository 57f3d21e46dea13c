// The per-format decoders behind decode_image(); each checks the pixel limit on the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "frugal/image/image.h"

namespace frugal::detail {

// A box in continuous pixel coordinates: [x0, x1) x [y0, y1).
struct FloatBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

ImageInfo jpeg_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void jpeg_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out);

ImageInfo png_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void png_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out);

// WebP, GIF, BMP and TIFF: the same contract as jpeg_info/jpeg_decode (the pixels as stored; the
// orientation is decode.cpp's); min_width/min_height are ignored.
ImageInfo webp_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void webp_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out);
// WebP with memory bounded by the output: libwebp decodes only the rows and columns of `box`
// (its crop starts on even coordinates, so `out` may hold one pixel more at the left and top) and
// scales them down by about `factor` with its area-averaging rescaler. Where `box` lies in out's
// pixels is returned. An animation is decoded whole (its frames are composed on a canvas).
// Lossless files still hold the whole image inside libwebp while decoding; lossy ones a few rows.
FloatBox webp_decode_reduced(std::span<const std::uint8_t> bytes, const CropBox& box, int factor,
                             const DecodeOptions& options, const std::string& where, Image& out);
ImageInfo gif_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void gif_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out);
ImageInfo bmp_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void bmp_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                Image& out);
ImageInfo tiff_info(std::span<const std::uint8_t> bytes, const std::string& where, std::uint64_t max_pixels);
void tiff_decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                 Image& out);

// A palette image's colours (GIF, BMP, TIFF): 256 entries, those a file does not define black, as
// PIL's; and each entry's luma (PIL's convert("L") of a "P" image), which set_luma() fills once the
// entries are set (not per row: a 1-pixel-wide image has as many rows as pixels).
struct Palette {
  std::uint8_t rgb[256][3] = {};
  std::uint8_t luma[256] = {};
};
void set_luma(Palette& palette);
// `pixels` indices through `palette` into `channels` per pixel: 3 the entry, 1 its luma.
void expand_palette(const std::uint8_t* index, std::size_t pixels, const Palette& palette, int channels,
                    std::uint8_t* out);

// The EXIF orientation of a TIFF structure (an EXIF block after its "Exif\0\0" prefix, or a
// whole TIFF file; classic and BigTIFF): the Orientation tag (0x0112) of its first IFD, read as
// PIL reads it (any integer type, one value; the last of duplicate tags). 0 when there is none or
// the structure does not parse. Reads only inside `tiff` (each offset checked), at most
// kMaxExifEntries entries: bounded time and no allocation.
inline constexpr std::uint64_t kMaxExifEntries = 4096;
int orientation_in_tiff(std::span<const std::uint8_t> tiff);

// Where `box` of an image displayed with `orientation` lies in the stored w x h image (the sides
// before the orientation): a continuous box, x0 <= x1 and y0 <= y1.
FloatBox stored_box(const FloatBox& display, int orientation, double stored_w, double stored_h);
// The inverse: where a box of the stored w x h image lies once the image is oriented.
FloatBox display_box(const FloatBox& stored, int orientation, double stored_w, double stored_h);
inline bool swaps_sides(int orientation) { return orientation >= 5 && orientation <= 8; }

// Where a crop box lies in a reduced PNG region (png_decode_reduced): out's pixel (i, j) is the
// mean of the source block [(first_x + i) * factor, ...+ factor) x [(first_y + j) * factor, ...),
// blocks aligned to the image's origin and cut at its right and bottom edges.
struct ReducedRegion {
  int factor = 1;
  int first_x = 0, first_y = 0;           // the first block, in blocks
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the box, in out's pixel coordinates
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
