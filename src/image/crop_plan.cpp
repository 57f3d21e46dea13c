// The one crop plan (plan_crop) and its CPU execution: transform_image and decode_transform.
// torchvision's geometry lives here only; src/gpu/plan.cpp turns the same plan into a kernel job.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "frugal/util/error.h"
#include "frugal/image/augment.h"
#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/resize.h"

namespace frugal {

using detail::ResizeSpec;

namespace {
// Python's round(): half to even, which torchvision's integer sizes go through.
int py_round(double v) { return static_cast<int>(std::nearbyint(v)); }

// Resize(256) + CenterCrop(224), scaled with the output; small images keep their size.
int eval_shorter(const TransformOptions& t) { return t.small ? t.image_size : t.image_size * 256 / 224; }

// torchvision Resize(shorter) then CenterCrop(size) of a w x h image: its integer sizes, then the
// window, into p.box/resize_w/resize_h/window/shorter.
void center_geometry(int w, int h, int shorter, int size, CropPlan& p) {
  // A long thin image (1 x 89M pixels is within the default --max-pixels) scaled up to `shorter`
  // would have a longer side past int: bad input, not a wrapped (undefined) conversion.
  const double longer = w <= 0 || h <= 0 ? HUGE_VAL : static_cast<double>(shorter) * std::max(w, h) / std::min(w, h);
  if (!(longer < static_cast<double>(std::numeric_limits<int>::max())))
    fail(ErrorKind::invalid, "resize of a " + std::to_string(w) + "x" + std::to_string(h) + " image",
         "an aspect ratio that keeps the longer side below 2^31 pixels at a shorter side of " + std::to_string(shorter),
         "a ratio of " + std::to_string(std::max(w, h)) + ":" + std::to_string(std::max(1, std::min(w, h))),
         "crop or remove the image");
  int new_w, new_h;
  if (w <= h) {
    new_w = shorter;
    new_h = static_cast<int>(longer);
  } else {
    new_h = shorter;
    new_w = static_cast<int>(longer);
  }
  const int cw = std::min(size, new_w), ch = std::min(size, new_h);
  p.box = {0, 0, w, h};
  p.resize_w = new_w;
  p.resize_h = new_h;
  p.window = {py_round((new_w - cw) / 2.0), py_round((new_h - ch) / 2.0), cw, ch};
  p.shorter = shorter;
}

ResizeSpec resize_spec(const CropPlan& p) {
  ResizeSpec s{0,          0,          double(p.box.width), double(p.box.height), p.resize_w,
               p.resize_h, p.window.x, p.window.y,          p.window.width,       p.window.height};
  s.mirror = p.flip;
  return s;
}
}  // namespace

CropBox random_resized_crop_box(int width, int height, Rng& rng, double scale_lo, double scale_hi, double ratio_lo,
                                double ratio_hi) {
  double area = static_cast<double>(width) * height;
  double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target_area = area * rng.uniform(scale_lo, scale_hi);
    double aspect = std::exp(rng.uniform(log_lo, log_hi));
    int w = py_round(std::sqrt(target_area * aspect));
    int h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int y = static_cast<int>(rng.randint(0, height - h + 1));
      int x = static_cast<int>(rng.randint(0, width - w + 1));
      return {x, y, w, h};
    }
  }
  double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = py_round(w / ratio_lo);
  } else if (in_ratio > ratio_hi) {
    w = py_round(h * ratio_hi);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropPlan plan_crop(const TransformOptions& t, std::uint64_t sample_seed, int width, int height) {
  if (width < 1 || height < 1)
    fail(ErrorKind::invalid, "crop plan", "an image of at least 1x1 pixels",
         std::to_string(width) + "x" + std::to_string(height), "");
  CropPlan p;
  const int S = t.image_size;
  if (!t.train) {
    p.kind = CropPlan::Kind::center_crop;
    center_geometry(width, height, eval_shorter(t), S, p);
    return p;
  }
  Rng rng(sample_seed);
  if (t.small) {
    p.kind = CropPlan::Kind::padded_crop;
    center_geometry(width, height, S, S, p);
    p.pad = S / 8;
    p.pad_y = static_cast<int>(rng.randint(0, 2 * p.pad + 1));
    p.pad_x = static_cast<int>(rng.randint(0, 2 * p.pad + 1));
  } else {
    p.kind = CropPlan::Kind::resized_crop;
    p.box = random_resized_crop_box(width, height, rng);
    p.resize_w = p.resize_h = S;
    p.window = {0, 0, S, S};
  }
  p.flip = rng.uniform() < 0.5 && t.augment.flips();
  return p;
}

void apply_crop_plan(const Image& in, const CropPlan& p, Image& tmp, Image& out) {
  const CropBox& b = p.box;
  const bool whole = b == CropBox{0, 0, in.width, in.height};
  if (b.x < 0 || b.y < 0 || b.width < 1 || b.height < 1 || b.x > in.width - b.width || b.y > in.height - b.height ||
      (p.kind != CropPlan::Kind::resized_crop && !whole))
    fail(ErrorKind::usage, "apply_crop_plan",
         "a plan drawn for this " + std::to_string(in.width) + "x" + std::to_string(in.height) + " image",
         "a box at " + std::to_string(b.x) + "," + std::to_string(b.y) + " of " + std::to_string(b.width) + "x" +
             std::to_string(b.height),
         "");
  switch (p.kind) {
    case CropPlan::Kind::resized_crop:
      detail::resize_window(detail::crop_view(in, b.x, b.y, b.width, b.height), resize_spec(p), out);
      return;
    case CropPlan::Kind::center_crop:
      detail::resize_window(detail::view_of(in), resize_spec(p), out);
      return;
    case CropPlan::Kind::padded_crop: {
      // The padded window is cut from an image_size x image_size image: the source itself when it
      // is that size already (no resampling), else its resized centre.
      const Image* base = &in;
      if (in.width != p.window.width || in.height != p.window.height) {
        ResizeSpec s = resize_spec(p);
        s.mirror = false;
        detail::resize_window(detail::view_of(in), s, tmp);
        base = &tmp;
      }
      pad_crop(*base, p.pad, p.pad_x, p.pad_y, p.window.width, p.window.height, out);
      if (p.flip) flip_horizontal(out);
      return;
    }
  }
}

namespace {

// The integer factor a PNG or WebP is reduced by while decoding for `plan`: the largest that keeps the
// plan's box at least twice the size it is resized to on each side (so the antialiased resize
// after it still does most of the filtering, and the result stays within a level or two of a full
// decode's), 1 when none does.
int png_reduction(const CropPlan& p) {
  const int want_w = 2 * std::max(1, p.resize_w), want_h = 2 * std::max(1, p.resize_h);
  return std::max(1, std::min(p.box.width / want_w, p.box.height / want_h));
}

// apply_crop_plan on a region that holds the plan's box at [x0, x1) x [y0, y1) of its pixels
// (a reduced decode), instead of on the image the plan was drawn for.
void apply_crop_plan_to_region(const detail::ImageView& region, double x0, double y0, double x1, double y1,
                               const CropPlan& p, Image& tmp, Image& out) {
  ResizeSpec s = resize_spec(p);
  s.x0 = x0, s.y0 = y0, s.x1 = x1, s.y1 = y1;
  if (p.kind != CropPlan::Kind::padded_crop) {
    detail::resize_window(region, s, out);
    return;
  }
  s.mirror = false;
  detail::resize_window(region, s, tmp);
  pad_crop(tmp, p.pad, p.pad_x, p.pad_y, p.window.width, p.window.height, out);
  if (p.flip) flip_horizontal(out);
}

}  // namespace

void resize_center_crop(const Image& in, int shorter, int size, Image& out) {
  CropPlan p;
  center_geometry(in.width, in.height, shorter, size, p);
  detail::resize_window(detail::view_of(in), resize_spec(p), out);
}

namespace {

// transform_image up to the crop plan; the decoding paths below end with it too.
void crop_image(const Image& in_raw, const TransformOptions& t, std::uint64_t seed, Image& out) {
  Image converted, tmp;
  const Image* in = &in_raw;
  if (t.channels && in_raw.channels != t.channels) {
    convert_channels(in_raw, t.channels, converted);
    in = &converted;
  }
  apply_crop_plan(*in, plan_crop(t, seed, in->width, in->height), tmp, out);
}

void augment_trained(const TransformOptions& t, std::uint64_t seed, Image& out) {
  if (!t.train || !t.augment.has_ops()) return;
  Image tmp;
  augment_sample(out, t.augment, seed, tmp);
}

}  // namespace

void transform_image(const Image& in, const TransformOptions& t, std::uint64_t seed, Image& out) {
  crop_image(in, t, seed, out);
  augment_trained(t, seed, out);
}

namespace {

// What decode_transform's cutting paths share. The plan is drawn on the image as it displays
// (info's sides are after the orientation); the decoders cut the stored image, so the box goes
// back to stored pixels, and the decoded region is turned before it is resized: the same pixels as
// decode whole, turn, crop.
struct PlannedDecode {
  PlannedDecode(std::span<const std::uint8_t> bytes, const TransformOptions& t, std::uint64_t max_pixels,
                std::uint64_t seed, const std::string& where)
      : bytes(bytes),
        t(t),
        seed(seed),
        where(where),
        info(read_image_info(bytes, where, max_pixels, t.exif)),
        plan(plan_crop(t, seed, info.width, info.height)),
        o(info.orientation),
        swap(detail::swaps_sides(o)),
        stored_w(swap ? info.height : info.width),
        stored_h(swap ? info.width : info.height) {}

  CropBox to_stored(const CropBox& b) const {
    const detail::FloatBox s = detail::stored_box(
        {double(b.x), double(b.y), double(b.x + b.width), double(b.y + b.height)}, o, stored_w, stored_h);
    return CropBox{static_cast<int>(s.x0), static_cast<int>(s.y0), static_cast<int>(s.x1 - s.x0),
                   static_cast<int>(s.y1 - s.y0)};
  }

  // A region decoded in stored orientation, its box [x0, x1) x [y0, y1) in its pixels: turned, with
  // its box (into a buffer of this thread's when it turns).
  std::pair<const Image*, detail::FloatBox> orient_region(const Image& region, double x0, double y0, double x1,
                                                          double y1) const {
    thread_local Image turned;
    const detail::FloatBox b = detail::display_box({x0, y0, x1, y1}, o, region.width, region.height);
    if (o == 1) return {&region, b};
    apply_orientation(region, o, turned);
    return {&turned, b};
  }

  // The plan carried out on such a region.
  void transform_region(const Image& region, double x0, double y0, double x1, double y1, Image& out) const {
    const auto [turned, b] = orient_region(region, x0, y0, x1, y1);
    Image tmp;
    apply_crop_plan_to_region(detail::view_of(*turned), b.x0, b.y0, b.x1, b.y1, plan, tmp, out);
  }

  std::span<const std::uint8_t> bytes;
  const TransformOptions& t;
  std::uint64_t seed;
  const std::string& where;
  ImageInfo info;
  CropPlan plan;
  int o;  // the EXIF orientation
  bool swap;
  int stored_w, stored_h;
};

// A PNG or WebP much larger than what the plan keeps, reduced by `factor` while it is decoded
// (png_decode_reduced, webp_decode_reduced), so a 9400 x 9400 PNG costs a few MB, not 265.
void decode_reduced(const PlannedDecode& pd, ImageFormat format, int factor, const DecodeOptions& d, Image& scratch,
                    Image& out) {
  detail::FloatBox r;
  if (format == ImageFormat::png) {
    const detail::ReducedRegion p =
        detail::png_decode_reduced(pd.bytes, pd.to_stored(pd.plan.box), factor, d, pd.where, scratch);
    r = {p.x0, p.y0, p.x1, p.y1};
  } else {
    r = detail::webp_decode_reduced(pd.bytes, pd.to_stored(pd.plan.box), factor, d, pd.where, scratch);
  }
  pd.transform_region(scratch, r.x0, r.y0, r.x1, r.y1, out);
}

// A JPEG: only as much is decoded as the plan needs.
void decode_jpeg_planned(const PlannedDecode& pd, DecodeOptions& d, Image& scratch, Image& out) {
  const CropPlan& plan = pd.plan;
  if (plan.kind == CropPlan::Kind::center_crop && pd.o != 1) {
    // A DCT-scaled image is ceil(side * m/8) pixels: its last column and row are partly the
    // encoder's padding. Turned, that partial edge can come first, so the plan's box is placed in
    // the scaled pixels exactly (the region decoder's box, here the whole image) rather than
    // redrawn on the scaled sides as below.
    d.min_width = d.min_height = plan.shorter;
    const JpegRegion r = decode_jpeg_region(pd.bytes, CropBox{0, 0, pd.stored_w, pd.stored_h}, d, pd.where, scratch);
    pd.transform_region(scratch, r.x0, r.y0, r.x1, r.y1, out);
    return;
  }
  if (plan.kind == CropPlan::Kind::center_crop) {
    d.min_width = d.min_height = plan.shorter;
    decode_image(pd.bytes, d, pd.where, scratch);
    // DCT scaling may have made the image smaller: torchvision's sizes are those of the image it
    // resizes. A centre crop draws nothing, so this is the same plan at the decoded size.
    Image unused;
    if (scratch.width == pd.info.width && scratch.height == pd.info.height)
      apply_crop_plan(scratch, plan, unused, out);
    else
      apply_crop_plan(scratch, plan_crop(pd.t, pd.seed, scratch.width, scratch.height), unused, out);
    return;
  }
  // Only the crop is decoded, at the smallest DCT scale that keeps it at least image_size; the
  // plan's box is then a float box in the decoded region's pixels.
  d.min_width = pd.swap ? plan.window.height : plan.window.width;
  d.min_height = pd.swap ? plan.window.width : plan.window.height;
  const JpegRegion r = decode_jpeg_region(pd.bytes, pd.to_stored(plan.box), d, pd.where, scratch);
  const auto [region, b] = pd.orient_region(scratch, r.x0, r.y0, r.x1, r.y1);
  int vx0 = static_cast<int>(std::floor(b.x0)), vy0 = static_cast<int>(std::floor(b.y0));
  int vx1 = std::min(region->width, static_cast<int>(std::ceil(b.x1)));
  int vy1 = std::min(region->height, static_cast<int>(std::ceil(b.y1)));
  ResizeSpec spec = resize_spec(plan);
  spec.x0 = b.x0 - vx0;
  spec.y0 = b.y0 - vy0;
  spec.x1 = b.x1 - vx0;
  spec.y1 = b.y1 - vy0;
  detail::resize_window(detail::crop_view(*region, vx0, vy0, vx1 - vx0, vy1 - vy0), spec, out);
}

void decode_crop(std::span<const std::uint8_t> bytes, const TransformOptions& t, std::uint64_t max_pixels,
                 std::uint64_t seed, const std::string& where, Image& scratch, Image& out) {
  DecodeOptions d;
  d.channels = t.channels;
  d.max_pixels = max_pixels;
  d.exif = t.exif;
  const ImageFormat format = sniff_format(bytes);
  const bool reducible = format == ImageFormat::png || format == ImageFormat::webp;
  if ((format != ImageFormat::jpeg && !reducible) || (format == ImageFormat::jpeg && t.small)) {
    decode_image(bytes, d, where, scratch);
    crop_image(scratch, t, seed, out);
    return;
  }
  const PlannedDecode pd(bytes, t, max_pixels, seed, where);
  if (!reducible) return decode_jpeg_planned(pd, d, scratch, out);
  if (const int factor = png_reduction(pd.plan); factor >= 2)
    return decode_reduced(pd, format, factor, d, scratch, out);
  decode_image(bytes, d, where, scratch);
  crop_image(scratch, t, seed, out);
}

}  // namespace

void decode_transform(std::span<const std::uint8_t> bytes, const TransformOptions& t, std::uint64_t max_pixels,
                      std::uint64_t seed, const std::string& where, Image& scratch, Image& out) {
  decode_crop(bytes, t, max_pixels, seed, where, scratch, out);
  augment_trained(t, seed, out);
}

}  // namespace frugal
