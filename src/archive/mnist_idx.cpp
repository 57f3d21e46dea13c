#include "archive/mnist_idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "frugal/archive/read_limit.h"
#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {
std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

constexpr std::size_t header_size(int dims) { return 4 + 4 * static_cast<std::size_t>(dims); }

// The size the header declares (header + product of the dimensions), after checking the magic;
// `head` holds at least the header. The product is checked: 2^22 * 2^22 * 2^20 must not wrap to 0.
std::uint64_t declared_size(std::span<const std::uint8_t> head, int want_dims, const std::string& where,
                            std::vector<std::uint32_t>* dims = nullptr) {
  if (head.size() < 4 || head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != want_dims)
    fail(ErrorKind::invalid, where, "an IDX file of unsigned bytes with " + std::to_string(want_dims) + " dimension(s)",
         head.size() < 4 ? "a file of " + std::to_string(head.size()) + " bytes" : "another header",
         "give the MNIST-style images-idx3 / labels-idx1 file");
  if (head.size() < header_size(want_dims))
    fail(ErrorKind::invalid, where, "a complete IDX header", "a truncated file", "download the file again");
  std::uint64_t n = 1;
  for (int i = 0; i < want_dims; ++i) {
    const std::uint32_t d = be32(&head[4 + 4 * static_cast<std::size_t>(i)]);
    if (dims) dims->push_back(d);
    n = checked_mul<std::uint64_t>(n, d, where, "the IDX dimensions' product");
  }
  return checked_add<std::uint64_t>(n, header_size(want_dims), where, "the IDX file size");
}

// An IDX file's data is read whole (pack holds every image): what its header declares must be
// within the cap before a byte of it is allocated.
void check_declared_cap(std::uint64_t declared, std::uint64_t max_bytes, const std::string& where) {
  if (declared <= max_bytes) return;
  fail(ErrorKind::invalid, where, "IDX data of at most " + format_size(max_bytes) + " ({max_file_bytes})",
       format_size(declared) + " (" + std::to_string(declared) + " bytes) declared by its header",
       "the file is damaged or crafted, or raise {max_file_bytes} if the dataset is that large");
}

// Checks magic, dimensions and that the data is exactly as long as they declare.
std::vector<std::uint32_t> idx_dims(std::span<const std::uint8_t> data, int want_dims, const std::string& where) {
  std::vector<std::uint32_t> dims;
  const std::uint64_t want = declared_size(data, want_dims, where, &dims);
  if (data.size() != want)
    fail(ErrorKind::invalid, where, std::to_string(want) + " bytes from the IDX header",
         std::to_string(data.size()) + " bytes", "the file is truncated or damaged; download it again");
  return dims;
}

bool is_gzip(std::span<const std::uint8_t> raw) { return raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b; }

bool only_zeros(std::span<const std::uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}

// One gzip stream (concatenated members are one) inflated piece by piece into the caller's buffer.
class Inflater {
 public:
  Inflater(std::span<const std::uint8_t> raw, const std::string& where) : where_(where), in_left_(raw.size()) {
    if (::inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) fail(ErrorKind::io, where, "a gzip decoder", "no memory", "");
    zs_.next_in = const_cast<Bytef*>(raw.data());
  }
  ~Inflater() { ::inflateEnd(&zs_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // One inflate() call into [out, out + room); returns zlib's code. Input is fed in pieces of at
  // most 1 GiB (avail_in is 32 bits).
  int step(std::uint8_t* out, std::size_t room) {
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(room);
    zs_.avail_in = static_cast<uInt>(std::min<std::size_t>(in_left_, std::size_t{1} << 30));
    const uInt in_before = zs_.avail_in;
    const int rc = ::inflate(&zs_, Z_NO_FLUSH);
    in_left_ -= in_before - zs_.avail_in;
    if (rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR)
      fail(ErrorKind::invalid, where_, "gzip data", "a corrupt gzip stream", "download the file again");
    if (rc == Z_BUF_ERROR || (rc == Z_OK && zs_.avail_out > 0 && in_left_ == 0))
      fail(ErrorKind::invalid, where_, "a complete gzip stream", "a truncated one", "download the file again");
    return rc;
  }
  // The room the last step() left unfilled.
  std::size_t unfilled() const { return zs_.avail_out; }
  // The input not yet inflated.
  std::span<const std::uint8_t> rest() const { return {zs_.next_in, in_left_}; }

  // After a member's end (Z_STREAM_END): another member may follow, or zero padding, which ends the
  // stream (true).
  bool member_ended() {
    if (is_gzip(rest())) {
      ::inflateReset(&zs_);
      return false;
    }
    if (!only_zeros(rest()))
      fail(ErrorKind::invalid, where_, "gzip members only", "other bytes after one", "download the file again");
    return true;
  }

 private:
  const std::string& where_;
  z_stream zs_{};
  std::size_t in_left_;
};

// The declared size must be one deflate can reach from the input (at most 1032:1), so a header
// cannot promise what the file cannot hold.
void check_reachable(std::uint64_t declared, std::size_t gzip_size, const std::string& where) {
  std::uint64_t reachable = 0;
  if (__builtin_mul_overflow(std::uint64_t{gzip_size}, std::uint64_t{1032}, &reachable) || declared > reachable)
    fail(ErrorKind::invalid, where, "an IDX header declaring what its gzip data can hold",
         std::to_string(declared) + " bytes declared in a " + std::to_string(gzip_size) + "-byte gzip file",
         "the file is damaged or crafted; download it again");
}

// The declared size is out: the stream must end here (its trailer checks the CRC-32), with nothing
// after it but zero padding. One byte more is a bomb or a damaged file.
void refuse_more(Inflater& z, std::uint64_t declared, const std::string& where) {
  std::uint8_t probe = 0;
  const int rc = z.step(&probe, 1);
  if (z.unfilled() == 0 || (rc == Z_STREAM_END && !only_zeros(z.rest())))
    fail(ErrorKind::invalid, where, std::to_string(declared) + " bytes from the IDX header",
         "more data when decompressed (stopped there)", "the file is damaged or a gzip bomb; download it again");
}

// Gunzips every member, stopping at what the IDX header (in the first bytes of output) declares:
// the output grows with what inflation produces, and one byte past the declared size is a bomb or a
// damaged file, refused.
std::vector<std::uint8_t> gunzip_idx(std::span<const std::uint8_t> raw, int want_dims, const std::string& where,
                                     std::uint64_t max_bytes) {
  Inflater z(raw, where);
  std::vector<std::uint8_t> out;
  std::uint64_t limit = header_size(want_dims);  // until the header is out, then the declared size
  bool have_header = false, ended = false;
  constexpr std::size_t kStep = std::size_t{1} << 20;
  while (!ended) {
    if (out.size() == limit) {
      if (have_header) break;
      limit = declared_size(out, want_dims, where);
      have_header = true;
      check_reachable(limit, raw.size(), where);
      check_declared_cap(limit, max_bytes, where);
      // Room for a typical ratio up front (MNIST's is ~5:1) spares most reallocations; beyond it
      // the buffer grows only as output appears.
      out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(limit, std::uint64_t{raw.size()} * 8)));
      continue;
    }
    const std::size_t base = out.size();
    const std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(kStep, limit - base));
    out.resize(base + room);  // grows with the output: memory follows what was inflated
    const int rc = z.step(out.data() + base, room);
    out.resize(base + (room - z.unfilled()));
    if (rc == Z_STREAM_END) ended = z.member_ended();
  }
  if (!ended) refuse_more(z, limit, where);
  return out;
}

// The IDX data of `raw` (taken, not copied, when it is not gzipped), checked against its header.
std::vector<std::uint8_t> idx_bytes(std::vector<std::uint8_t> raw, int want_dims, const std::string& where,
                                    std::uint64_t max_bytes) {
  std::vector<std::uint8_t> data = is_gzip(raw) ? gunzip_idx(raw, want_dims, where, max_bytes) : std::move(raw);
  check_declared_cap(declared_size(data, want_dims, where), max_bytes, where);
  idx_dims(data, want_dims, where);
  return data;
}

// A file's bytes, read only once its header agrees with the file: a raw IDX file must be as long as
// its header declares and within the cap, judged from its first bytes and its size (fstat), so a
// sparse 4 GiB file with a lying header is refused without being read. A gzipped one is read
// (compressed, at most max_bytes) and inflated only up to what its header declares.
std::vector<std::uint8_t> read_idx_file(const std::filesystem::path& path, int want_dims, std::uint64_t max_bytes) {
  const std::string where = path.string();
  {
    const UniqueFd fd = open_regular(path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail_errno("stat", where, errno);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, header_size(want_dims))));
    pread_full(fd.get(), head.data(), head.size(), 0, where);
    if (!is_gzip(head)) {
      const std::uint64_t declared = declared_size(head, want_dims, where);
      check_declared_cap(declared, max_bytes, where);
      if (declared != size)
        fail(ErrorKind::invalid, where, std::to_string(declared) + " bytes from the IDX header",
             std::to_string(size) + " bytes", "the file is truncated or damaged; download it again");
    }
  }
  return idx_bytes(read_file_capped(path, max_bytes), want_dims, where, max_bytes);
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
    fail(ErrorKind::invalid, images.string(),
         "its labels file " + (images.parent_path() / base).string() + " beside it", "no such file",
         "put the labels-idx1 file next to the images file");
  }
  fail(ErrorKind::usage, images.string(), "an IDX images file named like 'train-images-idx3-ubyte[.gz]'",
       "another name", "rename it, or give the folder holding the IDX files");
}
}  // namespace

namespace {
IdxImages idx_images(std::vector<std::uint8_t> data, const std::string& where) {
  IdxImages img;
  img.pixels = std::move(data);
  auto dims = idx_dims(img.pixels, 3, where);
  img.count = dims[0];
  img.rows = dims[1];
  img.cols = dims[2];
  if (img.count > 0 && (img.rows == 0 || img.cols == 0))
    fail(ErrorKind::invalid, where, "images of at least 1x1 pixels",
         std::to_string(img.rows) + "x" + std::to_string(img.cols), "the file is damaged; download it again");
  img.pixels.erase(img.pixels.begin(), img.pixels.begin() + header_size(3));
  return img;
}

std::vector<std::uint8_t> idx_labels(std::vector<std::uint8_t> data) {
  data.erase(data.begin(), data.begin() + header_size(1));
  return data;
}
}  // namespace

IdxImages parse_idx_images(std::span<const std::uint8_t> raw, const std::string& where, std::uint64_t max_bytes) {
  return idx_images(idx_bytes({raw.begin(), raw.end()}, 3, where, max_bytes), where);
}

std::vector<std::uint8_t> parse_idx_labels(std::span<const std::uint8_t> raw, const std::string& where,
                                           std::uint64_t max_bytes) {
  return idx_labels(idx_bytes({raw.begin(), raw.end()}, 1, where, max_bytes));
}

IdxImages read_idx_images(const std::filesystem::path& path, std::uint64_t max_bytes) {
  return idx_images(read_idx_file(path, 3, max_bytes), path.string());
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path, std::uint64_t max_bytes) {
  return idx_labels(read_idx_file(path, 1, max_bytes));
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
           "the sets " + list, "choose one with {idx_set}");
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

}  // namespace frugal
