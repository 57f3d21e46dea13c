#include "archive/idx.h"

#include <libdeflate.h>
#include <spng.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>

#include "frugal/error.h"
#include "frugal/fs.h"

namespace frugal {
namespace {
std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

// Fills `data` with the IDX header's dimensions after checking magic and declared length.
std::vector<std::uint32_t> idx_dims(const std::vector<std::uint8_t>& data, int want_dims, const std::string& where) {
  if (data.size() < 4 || data[0] != 0 || data[1] != 0 || data[2] != 0x08 || data[3] != want_dims)
    fail(ErrorKind::invalid, where, "an IDX file of unsigned bytes with " + std::to_string(want_dims) + " dimension(s)",
         data.size() < 4 ? "a file of " + std::to_string(data.size()) + " bytes" : "another header",
         "give the MNIST-style images-idx3 / labels-idx1 file");
  std::size_t header = 4 + 4 * static_cast<std::size_t>(want_dims);
  if (data.size() < header)
    fail(ErrorKind::invalid, where, "a complete IDX header", "a truncated file", "download the file again");
  std::vector<std::uint32_t> dims;
  std::uint64_t n = 1;
  for (int i = 0; i < want_dims; ++i) {
    dims.push_back(be32(&data[4 + 4 * i]));
    n *= dims.back();
  }
  if (data.size() != header + n)
    fail(ErrorKind::invalid, where, std::to_string(header + n) + " bytes from the IDX header",
         std::to_string(data.size()) + " bytes", "the file is truncated or damaged; download it again");
  return dims;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "train-images-idx3-ubyte.gz" -> "train"; empty when the name is not an images IDX name.
std::string images_set_name(const std::string& file) {
  for (const char* marker : {"-images-idx3", "-images.idx3"}) {
    auto at = file.find(marker);
    if (at != std::string::npos) return file.substr(0, at);
  }
  return "";
}

std::filesystem::path labels_for(const std::filesystem::path& images) {
  std::string f = images.filename().string();
  for (auto [from, to] : {std::pair{"images-idx3", "labels-idx1"}, std::pair{"images.idx3", "labels.idx1"}}) {
    auto at = f.find(from);
    if (at == std::string::npos) continue;
    std::string base = f.replace(at, std::strlen(from), to);
    // The labels may be gzipped while the images are not, or the other way round.
    std::string other = base.ends_with(".gz") ? base.substr(0, base.size() - 3) : base + ".gz";
    for (const auto& cand : {base, other})
      if (std::filesystem::exists(images.parent_path() / cand)) return images.parent_path() / cand;
    fail(ErrorKind::invalid, images.string(), "its labels file " + (images.parent_path() / base).string() + " beside it",
         "no such file", "put the labels-idx1 file next to the images file");
  }
  fail(ErrorKind::usage, images.string(), "an IDX images file named like 'train-images-idx3-ubyte[.gz]'",
       "another name", "rename it, or give the folder holding the IDX files");
}
}  // namespace

std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path) {
  std::string raw = read_file(path);
  const auto* in = reinterpret_cast<const std::uint8_t*>(raw.data());
  if (raw.size() < 2 || in[0] != 0x1f || in[1] != 0x8b) return {in, in + raw.size()};
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(libdeflate_alloc_decompressor(),
                                                                               libdeflate_free_decompressor);
  std::vector<std::uint8_t> out;
  std::size_t pos = 0;
  while (pos + 18 <= raw.size()) {  // one gzip member per round (concatenated members are valid gzip)
    std::size_t in_used = 0, out_n = 0;
    // The trailer's ISIZE is the size mod 2^32 of the last member; the buffer grows if it is wrong.
    std::uint32_t isize = std::uint32_t(in[raw.size() - 4]) | (std::uint32_t(in[raw.size() - 3]) << 8) |
                          (std::uint32_t(in[raw.size() - 2]) << 16) | (std::uint32_t(in[raw.size() - 1]) << 24);
    std::size_t cap = std::max<std::size_t>(isize, std::size_t(1) << 16);
    for (;;) {
      std::size_t base = out.size();
      out.resize(base + cap);
      auto r = libdeflate_gzip_decompress_ex(d.get(), in + pos, raw.size() - pos, out.data() + base, cap, &in_used,
                                             &out_n);
      if (r == LIBDEFLATE_SUCCESS) {
        out.resize(base + out_n);
        break;
      }
      out.resize(base);
      if (r != LIBDEFLATE_INSUFFICIENT_SPACE)
        fail(ErrorKind::invalid, path.string(), "gzip data", "a corrupt gzip stream", "download the file again");
      cap *= 2;
    }
    pos += in_used;
  }
  return out;
}

IdxImages read_idx_images(const std::filesystem::path& path) {
  IdxImages img;
  img.pixels = read_maybe_gzip(path);
  auto dims = idx_dims(img.pixels, 3, path.string());
  img.count = dims[0];
  img.rows = dims[1];
  img.cols = dims[2];
  img.pixels.erase(img.pixels.begin(), img.pixels.begin() + 16);
  return img;
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
  auto data = read_maybe_gzip(path);
  idx_dims(data, 1, path.string());
  data.erase(data.begin(), data.begin() + 8);
  return data;
}

bool looks_like_idx(const std::filesystem::path& path) {
  std::string f = path.filename().string();
  return f.find("idx3-ubyte") != std::string::npos || f.find("idx1-ubyte") != std::string::npos;
}

bool folder_has_idx(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && looks_like_idx(e.path())) return true;
  return false;
}

IdxSet find_idx_set(const std::filesystem::path& src, const std::string& wanted) {
  std::filesystem::path images;
  if (std::filesystem::is_directory(src)) {
    std::set<std::string> sets;
    std::vector<std::filesystem::path> found;
    for (const auto& e : std::filesystem::directory_iterator(src)) {
      std::string set = images_set_name(e.path().filename().string());
      if (set.empty() || !e.is_regular_file()) continue;
      sets.insert(set);
      if (wanted.empty() || set == wanted) found.push_back(e.path());
    }
    std::string list;
    for (const auto& s : sets) list += (list.empty() ? "" : ", ") + s;
    if (sets.empty())
      fail(ErrorKind::usage, src.string(), "IDX images files ('*-images-idx3-ubyte[.gz]')", "none",
           "give the folder that holds them");
    if (found.empty() || (wanted.empty() && sets.size() > 1))
      fail(ErrorKind::usage, src.string(), wanted.empty() ? "one IDX set" : "the IDX set '" + wanted + "'",
           "the sets " + list, "choose one with --idx-set");
    std::sort(found.begin(), found.end());  // "x.gz" and "x" of one set: either will do, pick stably
    images = found.front();
  } else {
    images = src;
  }
  IdxSet set{images_set_name(images.filename().string()), images, labels_for(images)};
  if (set.name.empty()) set.name = "img";
  return set;
}

std::vector<std::string> default_class_names(const std::filesystem::path& images, std::size_t classes) {
  if (classes == 10 && lower(images.string()).find("fashion") != std::string::npos)
    return {"0_T-shirt_top", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
            "5_Sandal",      "6_Shirt",   "7_Sneaker",  "8_Bag",   "9_Ankle_boot"};
  std::size_t width = std::to_string(classes > 0 ? classes - 1 : 0).size();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < classes; ++i) {
    std::string s = std::to_string(i);
    names.push_back(std::string(width - s.size(), '0') + s);
  }
  return names;
}

std::vector<std::uint8_t> encode_png_gray(const std::uint8_t* pixels, std::uint32_t width, std::uint32_t height) {
  std::unique_ptr<spng_ctx, void (*)(spng_ctx*)> ctx(spng_ctx_new(SPNG_CTX_ENCODER), spng_ctx_free);
  if (!ctx) throw Error(ErrorKind::io, "libspng: cannot create an encoder (out of memory?)");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = width;
  ihdr.height = height;
  ihdr.bit_depth = 8;
  ihdr.color_type = SPNG_COLOR_TYPE_GRAYSCALE;
  int err = spng_set_ihdr(ctx.get(), &ihdr);
  if (!err)
    err = spng_encode_image(ctx.get(), pixels, std::size_t(width) * height, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  std::size_t len = 0;
  void* buf = err ? nullptr : spng_get_png_buffer(ctx.get(), &len, &err);
  if (!buf || err) throw Error(ErrorKind::io, std::string("libspng: PNG encoding failed: ") + spng_strerror(err));
  std::vector<std::uint8_t> out(static_cast<std::uint8_t*>(buf), static_cast<std::uint8_t*>(buf) + len);
  std::free(buf);
  return out;
}

}  // namespace frugal
