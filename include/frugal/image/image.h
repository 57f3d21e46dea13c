// Image decoding and transforms on plain uint8 buffers (no LibTorch here).
//
// Decoders: JPEG through TurboJPEG (baseline, progressive, grayscale, CMYK/YCCK; DCT scaling when
// the caller can use a smaller image) and, for crops, libjpeg's cropped + DCT-scaled decoding;
// PNG through libspng (gray, palette, alpha, 16-bit), which also encodes; WebP through libwebp
// (lossy, lossless, alpha; an animation's first frame); GIF through giflib (the first frame);
// TIFF through libtiff (the first page); BMP by frugal's own reader (bmp.cpp says why). Each gives
// what PIL's Image.open(f).convert("RGB" | "L") gives (alpha dropped, not composited). The format
// is decided by the magic bytes, never by the file name. Every decoder checks the pixel limit on
// the header, before it allocates. EXIF orientation (JPEG, PNG, WebP; TIFF's own tag) is applied
// as PIL's ImageOps.exif_transpose applies it, unless asked not to.
//
// Transforms follow torchvision: random-resized-crop (with its 10-try fallback), padded random
// crop, horizontal flip, resize of the shorter side + center crop; resizing is bilinear with
// antialias when downscaling, as PIL does it. TrivialAugment, RandAugment and random erasing after
// the crop: frugal/image/augment.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frugal/util/checked.h"

namespace frugal {

// The formats frugal decodes, then those it recognises by their magic bytes only, to name them
// when it refuses them (a phone's HEIC photos are "unsupported format (HEIC)", not "not an image").
enum class ImageFormat { unknown, jpeg, png, npy, webp, gif, bmp, tiff, heic, avif, jpeg_xl, jpeg2000 };

// From the first bytes (32 are enough: an ISO-BMFF file names its brands there).
ImageFormat sniff_format(std::span<const std::uint8_t> bytes);
const char* format_name(ImageFormat format);  // "JPEG", "WebP", "HEIC", ...
// From a file name's extension (any case), for entries whose bytes are not at hand (a deflated
// zip entry): the format it claims, checked again by the magic bytes when decoded.
ImageFormat format_from_extension(const std::string& file_name);
// Whether decode_image reads it (npy is read by the dataset layer, not here).
bool is_decodable(ImageFormat format);

// Whether the EXIF orientation tag is applied: `apply` turns the pixels as PIL's
// ImageOps.exif_transpose does (a phone photo stored sideways comes out upright), `ignore` keeps
// them as stored.
enum class ExifOrientation { apply, ignore };

// An interleaved image: (H, W, C) uint8, C = 1 or 3, rows contiguous.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;

  // Error(invalid) for a negative side or a byte count that overflows: every decoder and transform
  // allocates through here, so no wrapped size reaches the allocator.
  void resize(int w, int h, int c) {
    const std::size_t n = checked_mul(checked_mul(checked_cast<std::size_t>(w, "an image", "its width"),
                                                  checked_cast<std::size_t>(h, "an image", "its height"), "an image"),
                                      checked_cast<std::size_t>(c, "an image", "its channels"), "an image");
    if (n > pixels.max_size()) fail_overflow("an image", "its byte count");
    width = w;
    height = h;
    channels = c;
    pixels.resize(n);
  }
  std::uint8_t* row(int y) { return pixels.data() + static_cast<std::size_t>(y) * width * channels; }
  const std::uint8_t* row(int y) const { return pixels.data() + static_cast<std::size_t>(y) * width * channels; }
};

struct ImageInfo {
  ImageFormat format = ImageFormat::unknown;
  int width = 0, height = 0;  // as decode_image returns it: after the orientation (sides swapped for 5-8)
  int channels = 0;           // as decoded natively: 1 for grayscale, else 3 (alpha is dropped)
  // The EXIF orientation (1-8) that decode_image applies: 1 when the file has none, has a value
  // outside 1-8, or ExifOrientation::ignore was asked.
  int orientation = 1;
};

struct DecodeOptions {
  int channels = 0;                     // 0: as the image (1 or 3); 1: luma; 3: RGB (gray replicated)
  std::uint64_t max_pixels = 89478485;  // width*height above this is rejected before allocating
  // JPEG only: decode at the smallest DCT scale (1/8 steps) whose result is still at least this
  // large in both dimensions (the sides of the stored image, before its orientation); 0: full size.
  int min_width = 0, min_height = 0;
  ExifOrientation exif = ExifOrientation::apply;
};

// Reads the header (and the EXIF orientation) only. Throws Error(invalid) naming `where` for
// corrupt or unknown data and Error(invalid) for images above max_pixels.
ImageInfo read_image_info(std::span<const std::uint8_t> bytes, const std::string& where,
                          std::uint64_t max_pixels = 89478485, ExifOrientation exif = ExifOrientation::apply);

// Decodes any format is_decodable() names, oriented as options.exif says. Throws Error(invalid)
// naming `where` for corrupt, truncated, unsupported or oversized images.
void decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where,
                  Image& out);
Image decode_image(std::span<const std::uint8_t> bytes, const DecodeOptions& options, const std::string& where);

// PNG (libspng, 8-bit): `pixels` are `height` rows of width*channels bytes, channels 1 (gray) or
// 3 (RGB). The same pixels give the same bytes. Error(usage) for a buffer of another size,
// Error(io) when libspng fails.
std::vector<std::uint8_t> encode_png(std::span<const std::uint8_t> pixels, std::uint32_t width, std::uint32_t height,
                                     int channels);
inline std::vector<std::uint8_t> encode_png(const Image& image) {
  return encode_png(image.pixels, static_cast<std::uint32_t>(image.width), static_cast<std::uint32_t>(image.height),
                    image.channels);
}

// 1 -> 3 channels (replicate) or 3 -> 1 (ITU-R 601 luma, as PIL's convert("L")).
void convert_channels(const Image& in, int channels, Image& out);

// The EXIF orientation (1-8) of a JPEG (its first APP1 "Exif" segment), PNG (eXIf chunk), WebP
// (EXIF chunk) or TIFF (the Orientation tag of its first page); 1 for other formats, for none, for
// a value outside 1-8 and for EXIF data that does not parse (never an error: the pixels are
// still good).
int exif_orientation(std::span<const std::uint8_t> bytes);

// `in` turned to display as EXIF orientation `orientation` says (PIL's exif_transpose: 2 mirror,
// 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
// anticlockwise); 1 (and anything outside 2-8) copies.
void apply_orientation(const Image& in, int orientation, Image& out);

// --- transforms -------------------------------------------------------------------------------

// A deterministic generator (splitmix64 seeding + xoshiro256**); the same seed gives the same
// numbers on every platform, unlike std::uniform_*_distribution.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                                        // [0, 1)
  double uniform(double lo, double hi);                    // [lo, hi)
  std::int64_t randint(std::int64_t lo, std::int64_t hi);  // [lo, hi)

 private:
  std::uint64_t s_[4];
};

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b);  // order-sensitive 64-bit mix

// The seed of sample `index` in `epoch` of a run seeded with `seed`: what the loaders hand to the
// transforms, so an image is cropped alike on every path and on resume.
inline std::uint64_t sample_seed(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
  return mix_seed(mix_seed(seed, epoch), index);
}

// A crop box in source pixels (integer, as torchvision's get_params returns).
struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
  bool operator==(const CropBox&) const = default;
};

// Where a crop box lies in a decoded JPEG region (decode_jpeg_region).
struct JpegRegion {
  int scale_num = 8;                      // decoded at scale_num/8 of the full size
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the box, in the region's pixel coordinates
};

// JPEG only: decodes just the part of the image that covers `box` (full-size pixel coordinates of
// the image as stored: no EXIF orientation here; decode_transform turns what it cuts),
// at the smallest DCT scale M/8 (M = 1, 2, 4 or 8: the fast ones) at which the box keeps at least
// options.min_width x options.min_height pixels (0: full size). `out` may hold a few pixels more around the box (iMCU
// snapping); inside the box its pixels are a full decode's at that scale. Channels, the pixel
// limit and errors as decode_image; Error(usage) for a box outside the image.
JpegRegion decode_jpeg_region(std::span<const std::uint8_t> bytes, const CropBox& box, const DecodeOptions& options,
                              const std::string& where, Image& out);

// torchvision RandomResizedCrop.get_params: scale (0.08, 1), ratio (3/4, 4/3), 10 tries, then the
// central crop clamped to the ratio range.
CropBox random_resized_crop_box(int width, int height, Rng& rng, double scale_lo = 0.08, double scale_hi = 1.0,
                                double ratio_lo = 3.0 / 4, double ratio_hi = 4.0 / 3);

// Resizes the region `box` of `in` (float box, in source pixels) to out_w x out_h: bilinear,
// antialiased when downscaling (PIL's ImagingResample with a box). Fixed-point fast path.
void resize_bilinear(const Image& in, double box_x0, double box_y0, double box_x1, double box_y1, int out_w, int out_h,
                     Image& out);
// The plain double-precision reference of the same filter; tests hold the two within 1 level.
void resize_bilinear_reference(const Image& in, double box_x0, double box_y0, double box_x1, double box_y1, int out_w,
                               int out_h, Image& out);

void flip_horizontal(Image& img);

// (H, W, C) -> C planes of H x W at dst (width*height*channels bytes): a batch's layout.
void to_planar(const Image& img, std::uint8_t* dst);

// Zero padding on every side, then the window (x, y, w, h) of the padded image.
void pad_crop(const Image& in, int pad, int x, int y, int w, int h, Image& out);

// Resize so the shorter side is `shorter` (aspect kept, torchvision's int() rounding), then
// center crop size x size.
void resize_center_crop(const Image& in, int shorter, int size, Image& out);

// --augment: what training adds after the random crop (which every choice keeps); the ops are
// frugal/image/augment.h's.
//   none: nothing; flip: a horizontal flip half the time (the default, frugal's recipe until now);
//   trivial: flip, then TrivialAugmentWide; randaugment: flip, then RandAugment(num_ops, magnitude).
// erasing: --random-erasing P, RandomErasing(p=P) after all of them (0: off).
struct AugmentOptions {
  enum class Policy { none, flip, trivial, randaugment };
  Policy policy = Policy::flip;
  int num_ops = 2, magnitude = 9;  // randaugment's N and M (M a bin of 31: 0..30)
  double erasing = 0;
  bool operator==(const AugmentOptions&) const = default;

  bool flips() const { return policy != Policy::none; }
  // Whether anything beyond the crop and flip runs (what the GPU decode path cannot do).
  bool has_ops() const { return policy == Policy::trivial || policy == Policy::randaugment || erasing > 0; }
};

// The training/eval transforms the loader applies. `small` (images of 64 px and less): padded
// random crop (padding size/8) + flip instead of random-resized-crop. In training, `augment` then
// runs on the cropped image (augment_sample); evaluation ignores it.
struct TransformOptions {
  int image_size = 224;
  bool train = true;
  bool small = false;
  AugmentOptions augment;
  int channels = 0;                               // 0: as decoded
  ExifOrientation exif = ExifOrientation::apply;  // the plan is drawn on the image as it displays
};

// One sample's geometry, drawn once from its seed and the source size. transform_image,
// decode_transform and the GPU path (gpu::plan_job) all carry out this plan, so every path crops,
// resizes and flips a sample alike; nothing else draws from the sample's seed (the augmentations after
// it draw from augment_seed(seed), a stream of their own: frugal/image/augment.h).
//   resized_crop (train): the random box, resized to image_size x image_size, maybe flipped.
//   center_crop (eval): the whole image, its shorter side resized to `shorter`, the centre kept.
//   padded_crop (train, small): the whole image brought to image_size x image_size as center_crop
//     does (skipped when it is that size already), zero-padded by `pad` on every side, the
//     image_size x image_size window at (pad_x, pad_y) of that kept, maybe flipped.
struct CropPlan {
  enum class Kind { resized_crop, center_crop, padded_crop };
  Kind kind = Kind::resized_crop;
  CropBox box;                        // the source pixels that are resized
  int resize_w = 0, resize_h = 0;     // ...to this size (torchvision's integer sizes),
  CropBox window;                     // ...of which this window is kept
  int shorter = 0;                    // center_crop and padded_crop: the shorter side's size after the resize
  int pad = 0, pad_x = 0, pad_y = 0;  // padded_crop only
  bool flip = false;                  // mirror the output left-right
  bool operator==(const CropPlan&) const = default;
};

// The plan for a width x height source (the draws of torchvision's transforms, in their order:
// the box, then the flip; for small images the padded window's y, x, then the flip). The flip is
// drawn even when transform.augment does not flip (--augment none), so the boxes stay the same.
// Error(invalid) for a side below 1 and for an image whose resized longer side would pass 2^31
// pixels (the GPU path counts such an image bad, as the CPU path does).
CropPlan plan_crop(const TransformOptions& transform, std::uint64_t sample_seed, int width, int height);

// Carries `plan` out on an image of the size it was drawn for (Error(usage) otherwise); channels
// are kept. `tmp` is scratch space.
void apply_crop_plan(const Image& in, const CropPlan& plan, Image& tmp, Image& out);

// Decode + transform of one encoded image, with DCT-scaled decoding where the crop allows it.
// The plan is drawn on the image oriented as transform.exif says (read_image_info's sides); a
// JPEG or PNG crop is cut from the stored image and turned, which gives the pixels of decoding the
// whole image, turning it and cropping. `scratch` is reused between calls by one thread. Output:
// image_size x image_size.
void decode_transform(std::span<const std::uint8_t> bytes, const TransformOptions& transform, std::uint64_t max_pixels,
                      std::uint64_t seed, const std::string& where, Image& scratch, Image& out);
// Same transform on an already decoded image (npy samples, tests). Both end with augment_sample
// in training (transform.augment).
void transform_image(const Image& in, const TransformOptions& transform, std::uint64_t seed, Image& out);

}  // namespace frugal
