// Cropped, DCT-scaled JPEG decoding through libjpeg-turbo's libjpeg API: TurboJPEG 2.1 cannot
// crop, but jpeg_crop_scanline (columns, snapped down to an iMCU) and jpeg_skip_scanlines (rows)
// let the loader run the IDCT, upsampling and color conversion only where its random crop lies.
//
// libjpeg reports errors by longjmp: every function that arms the jump buffer keeps only
// trivially destructible locals, and the C++ work (allocation, throwing) happens between them.
#include <cstdio>  // jpeglib.h needs FILE

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "image/codecs.h"
#include "image/jpeg_huffman.h"

namespace frugal::detail {
namespace {

constexpr int kMaxScans = 500;  // TurboJPEG's TJFLAG_LIMITSCANS bound, against crafted progressive files

struct ErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool truncated = false;
  bool fast_gave_up = false;              // the fast entropy decoder met something only libjpeg's handles
  bool fast_progressive_pending = false;  // to be installed at jpeg_start_decompress's first progress call
  JDIMENSION rows_needed = 0;             // the output rows read: a progressive scan can stop below them
  char message[JMSG_LENGTH_MAX] = {};
};

extern "C" void on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (extraneous bytes, a corrupt Huffman code...) are accepted as PIL accepts them, except
// a premature end of data: libjpeg would fill the rest with gray, PIL refuses the file.
extern "C" void on_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<ErrorMgr*>(c->err)->truncated = true;
}

extern "C" void on_fast_give_up(j_decompress_ptr c) {
  auto* e = reinterpret_cast<ErrorMgr*>(c->err);
  e->fast_gave_up = true;
  std::snprintf(e->message, sizeof e->message, "the fast entropy decoder gave up");
  std::longjmp(e->jump, 1);
}

extern "C" void on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  auto* err = reinterpret_cast<ErrorMgr*>(c->err);
  if (err->fast_progressive_pending) {
    err->fast_progressive_pending = false;
    use_fast_progressive(reinterpret_cast<j_decompress_ptr>(c), on_fast_give_up, err->rows_needed);
  }
  if (reinterpret_cast<j_decompress_ptr>(c)->input_scan_number > kMaxScans) {
    auto* e = reinterpret_cast<ErrorMgr*>(c->err);
    std::snprintf(e->message, sizeof e->message, "progressive JPEG with more than %d scans", kMaxScans);
    std::longjmp(e->jump, 1);
  }
}

// One per image: a decompressor keeps the Huffman and quantization tables of the files it read,
// and would decode a later file that lacks one with them, so the pixels of a damaged file would
// depend on what its thread decoded before. Creating one takes ~0.2 us.
struct Decoder {
  jpeg_decompress_struct cinfo{};
  ErrorMgr err;
  jpeg_progress_mgr progress{};
  bool created = false;

  Decoder() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    progress.progress_monitor = on_progress;
    if (setjmp(err.jump)) return;  // out of memory: `created` stays false
    jpeg_create_decompress(&cinfo);
    created = true;
  }
  ~Decoder() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

void check_created(const Decoder& d) {
  if (!d.created) fail(ErrorKind::io, "libjpeg", "a decompressor", "none (out of memory?)", "");
}

[[noreturn]] void fail_jpeg(const std::string& where, const char* why) {
  fail(ErrorKind::invalid, where, "a decodable JPEG image", std::string("libjpeg error: ") + why,
       "the file is corrupt; remove or replace it");
}

bool read_header(Decoder& d, std::span<const std::uint8_t> bytes) {
  j_decompress_ptr c = &d.cinfo;
  if (setjmp(d.err.jump)) {
    jpeg_abort_decompress(c);
    return false;
  }
  d.err.truncated = false;
  d.err.fast_gave_up = false;
  c->progress = &d.progress;
  jpeg_mem_src(c, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(c, TRUE);
  return true;
}

// Starts decompression and crops the columns to [*x, *x + *w) of the scaled image; libjpeg moves
// *x down to an iMCU boundary and widens *w to keep the right edge. With `fast`, the entropy
// decoder of jpeg_huffman.h takes over where the image allows.
bool start_cropped(Decoder& d, JDIMENSION* x, JDIMENSION* w, JDIMENSION rows_needed, EntropyDecoder which) {
  j_decompress_ptr c = &d.cinfo;
  if (setjmp(d.err.jump)) {
    jpeg_abort_decompress(c);
    return false;
  }
  // A progressive image is entropy-decoded inside jpeg_start_decompress: its fast decoder goes in
  // from the progress monitor; a baseline one's after.
  d.err.fast_progressive_pending = which == EntropyDecoder::best && c->progressive_mode;
  d.err.rows_needed = rows_needed;
  jpeg_start_decompress(c);
  d.err.fast_progressive_pending = false;
  if (which == EntropyDecoder::best) use_fast_huffman(c, on_fast_give_up);
  if (*x != 0 || *w != c->output_width) jpeg_crop_scanline(c, x, w);
  return true;
}

// Rows [y0, y0 + n) of the scaled image into rows[0..n). With a `spare` row, the rows below are
// entropy-decoded too (no IDCT but for the last), so a file cut short there is still noticed.
bool read_rows(Decoder& d, JDIMENSION y0, JSAMPROW* rows, JDIMENSION n, JSAMPROW spare) {
  j_decompress_ptr c = &d.cinfo;
  if (setjmp(d.err.jump)) {
    jpeg_abort_decompress(c);
    return false;
  }
  if (y0 > 0 && jpeg_skip_scanlines(c, y0) != y0) {
    std::snprintf(d.err.message, sizeof d.err.message, "could not skip to row %u", static_cast<unsigned>(y0));
    jpeg_abort_decompress(c);
    return false;
  }
  for (JDIMENSION done = 0; done < n;) {
    JDIMENSION got = jpeg_read_scanlines(c, rows + done, n - done);
    if (got == 0) break;
    done += got;
  }
  if (spare && c->output_scanline < c->output_height) {
    // Skipping straight to the end decodes nothing; stop one row short and read that row.
    JDIMENSION left = c->output_height - c->output_scanline;
    if (left > 1) jpeg_skip_scanlines(c, left - 1);
    jpeg_read_scanlines(c, &spare, 1);
  }
  if (c->output_scanline == c->output_height)
    jpeg_finish_decompress(c);
  else
    jpeg_abort_decompress(c);
  return true;
}

// A file that ends with the EOI marker was not cut short: 0xFFD9 cannot occur inside
// entropy-coded data (a 0xFF there is followed by 0x00 or a restart marker).
bool ends_with_eoi(std::span<const std::uint8_t> b) {
  return b.size() >= 2 && b[b.size() - 2] == 0xFF && b[b.size() - 1] == 0xD9;
}

}  // namespace

// Only 1/8, 2/8 and 4/8 (and 8/8): libjpeg-turbo has SIMD IDCTs for those, and its scalar 3..7
// point IDCTs (chroma at twice that) make 5/8..7/8 slower than a full-size decode and 3/8 slower
// than 4/8 (500x375 photos, whole image, one core: 1/8 1.18 ms, 2/8 1.29, 3/8 1.55, 4/8 1.42,
// 5/8 2.02, 6/8 2.28, 7/8 2.89, 8/8 1.62).
int jpeg_region_scale(int box_w, int box_h, int min_w, int min_h) {
  if (min_w <= 0 && min_h <= 0) return 8;
  for (int m : {1, 2, 4})
    if (static_cast<long>(box_w) * m >= 8L * min_w && static_cast<long>(box_h) * m >= 8L * min_h) return m;
  return 8;
}

namespace {

// check_pixels, and a box inside the image; the decompressor is aborted before either throws.
void check_size_and_box(j_decompress_ptr c, const CropBox& box, const DecodeOptions& options,
                        const std::string& where) {
  const int W = static_cast<int>(c->image_width), H = static_cast<int>(c->image_height);
  try {
    check_pixels(W, H, options.max_pixels, where);
  } catch (...) {
    jpeg_abort_decompress(c);
    throw;
  }
  // Compared without forming box.x + box.width, which can overflow int for a caller's box.
  if (box.width <= 0 || box.height <= 0 || box.x < 0 || box.y < 0 || box.x > W || box.y > H || box.width > W - box.x ||
      box.height > H - box.y) {
    jpeg_abort_decompress(c);
    fail(ErrorKind::usage, where, "a crop box inside the " + std::to_string(W) + "x" + std::to_string(H) + " image",
         std::to_string(box.width) + "x" + std::to_string(box.height) + " at (" + std::to_string(box.x) + ", " +
             std::to_string(box.y) + ")",
         "");
  }
}

// The box on the scaled image (an 8x8 block becomes m x m), one pixel of margin around it: a
// cropped decode upsamples chroma at its own edges as at the image's, so only the pixels one
// step inside equal the full decode's.
struct ScaledBox {
  int sw = 0, sh = 0;                         // the scaled image's sides
  double bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;  // the box on it
  int px0 = 0, px1 = 0, py0 = 0, py1 = 0;     // the pixels decoded: the box and its margin
};

ScaledBox scaled_box(const CropBox& box, int W, int H, int m) {
  const double f = m / 8.0;
  ScaledBox s;
  s.sw = (W * m + 7) / 8, s.sh = (H * m + 7) / 8;
  s.bx0 = box.x * f, s.by0 = box.y * f;
  s.bx1 = std::min<double>((box.x + box.width) * f, s.sw), s.by1 = std::min<double>((box.y + box.height) * f, s.sh);
  s.px0 = std::max(0, static_cast<int>(std::floor(s.bx0)) - 1);
  s.px1 = std::min(s.sw, static_cast<int>(std::ceil(s.bx1)) + 1);
  s.py0 = std::max(0, static_cast<int>(std::floor(s.by0)) - 1);
  s.py1 = std::min(s.sh, static_cast<int>(std::ceil(s.by1)) + 1);
  return s;
}

// libjpeg's crop must cover the pixels asked for (it widens to whole blocks, never narrows).
void check_cropped(j_decompress_ptr c, const ScaledBox& s, int m, JDIMENSION xoff, JDIMENSION width,
                   const std::string& where) {
  if (static_cast<int>(c->output_height) != s.sh || static_cast<int>(xoff) > s.px0 ||
      static_cast<int>(xoff + width) < s.px1) {
    jpeg_abort_decompress(c);
    fail(ErrorKind::io, where,
         "a " + std::to_string(s.sw) + " px high image at scale " + std::to_string(m) + "/8 cropped to cover [" +
             std::to_string(s.px0) + ", " + std::to_string(s.px1) + ")",
         std::to_string(c->output_height) + " px high, columns [" + std::to_string(xoff) + ", " +
             std::to_string(xoff + width) + ")",
         "this is a bug in frugal or libjpeg; please report it with the file");
  }
}

// Row pointers into `out`, or into `*cmyk_buf` for CMYK (converted after); the decompressor is
// aborted when allocating throws.
void point_rows(j_decompress_ptr c, JDIMENSION width, int rows, std::vector<std::uint8_t>* cmyk_buf, Image& out,
                std::vector<JSAMPROW>& row_ptrs) {
  const int comps = c->output_components;
  std::uint8_t* dst;
  std::size_t stride = static_cast<std::size_t>(width) * comps;
  try {
    if (cmyk_buf) {
      cmyk_buf->resize(stride * rows);
      dst = cmyk_buf->data();
    } else {
      out.resize(static_cast<int>(width), rows, comps);
      dst = out.pixels.data();
    }
    row_ptrs.resize(rows);
  } catch (...) {
    jpeg_abort_decompress(c);
    throw;
  }
  for (int y = 0; y < rows; ++y) row_ptrs[y] = dst + y * stride;
}

// PIL's luma of the RGB pixels rather than libjpeg's Y, as decode_image gives "L" models.
void to_luma(Image& out) {
  thread_local Image rgb;
  std::swap(rgb, out);
  out.resize(rgb.width, rgb.height, 1);
  rgb_to_luma(rgb.pixels.data(), static_cast<std::size_t>(rgb.width) * rgb.height, out.pixels.data());
}

// One decoding attempt; false when the fast entropy decoder gave up on the stream.
bool decode_region_once(std::span<const std::uint8_t> bytes, const CropBox& box, const DecodeOptions& options,
                        const std::string& where, EntropyDecoder which, Image& out, JpegRegion& r) {
  Decoder d;
  check_created(d);
  j_decompress_ptr c = &d.cinfo;
  if (!read_header(d, bytes)) fail_jpeg(where, d.err.message);
  check_size_and_box(c, box, options, where);
  const bool gray = c->jpeg_color_space == JCS_GRAYSCALE;
  const bool cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  const int channels = options.channels ? options.channels : (gray ? 1 : 3);
  c->out_color_space = cmyk ? JCS_CMYK : (gray && channels == 1) ? JCS_GRAYSCALE : JCS_RGB;
  const int m = jpeg_region_scale(box.width, box.height, options.min_width, options.min_height);
  c->scale_num = static_cast<unsigned>(m);
  c->scale_denom = 8;
  c->dct_method = JDCT_ISLOW;  // TurboJPEG's and PIL's default
  r.scale_num = m;
  const ScaledBox sb = scaled_box(box, static_cast<int>(c->image_width), static_cast<int>(c->image_height), m);
  const int sh = sb.sh, px0 = sb.px0, px1 = sb.px1, py0 = sb.py0, py1 = sb.py1;
  JDIMENSION xoff = static_cast<JDIMENSION>(px0), width = static_cast<JDIMENSION>(px1 - px0);
  // Rows below the box need not be decoded, unless the file may be cut short there (no end marker):
  // then they are entropy-decoded too, so that the cut is noticed (read_rows' spare row).
  const bool to_the_end = py1 < sh && !ends_with_eoi(bytes);
  const JDIMENSION rows_needed = static_cast<JDIMENSION>(to_the_end ? sh : py1);
  if (!start_cropped(d, &xoff, &width, rows_needed, which)) {
    if (d.err.fast_gave_up) return false;
    fail_jpeg(where, d.err.message);
  }
  check_cropped(c, sb, m, xoff, width, where);
  const int rows = py1 - py0;
  const std::size_t stride = static_cast<std::size_t>(width) * c->output_components;
  thread_local std::vector<std::uint8_t> cmyk_buf;
  thread_local std::vector<JSAMPROW> row_ptrs;
  point_rows(c, width, rows, cmyk ? &cmyk_buf : nullptr, out, row_ptrs);
  thread_local std::vector<std::uint8_t> spare;
  JSAMPROW spare_row = nullptr;
  if (to_the_end) {
    spare.resize(stride);
    spare_row = spare.data();
  }
  if (!read_rows(d, static_cast<JDIMENSION>(py0), row_ptrs.data(), static_cast<JDIMENSION>(rows), spare_row)) {
    if (d.err.fast_gave_up) return false;
    fail_jpeg(where, d.err.message);
  }
  if (d.err.truncated) fail_jpeg(where, "Premature end of JPEG file");
  if (cmyk) {
    out.resize(static_cast<int>(width), rows, 3);
    cmyk_to_rgb(cmyk_buf.data(), static_cast<std::size_t>(width) * rows, out.pixels.data());
  }
  if (channels == 1 && out.channels == 3) to_luma(out);
  r.x0 = sb.bx0 - xoff;
  r.x1 = sb.bx1 - xoff;
  r.y0 = sb.by0 - py0;
  r.y1 = sb.by1 - py0;
  return true;
}

}  // namespace

JpegRegion jpeg_decode_region(std::span<const std::uint8_t> bytes, const CropBox& box, const DecodeOptions& options,
                              const std::string& where, Image& out, EntropyDecoder which) {
  JpegRegion r;
  if (decode_region_once(bytes, box, options, where, which, out, r)) return r;
  // Damaged or unusual entropy-coded data: libjpeg's own decoder decides, exactly as without the
  // fast one (the few such files pay for two attempts).
  if (!decode_region_once(bytes, box, options, where, EntropyDecoder::libjpeg, out, r))
    fail(ErrorKind::io, where, "a decode by libjpeg alone", "the fast decoder still engaged",
         "this is a bug in frugal; please report it with the file");
  return r;
}

}  // namespace frugal::detail
