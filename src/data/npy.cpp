#include "data/npy.h"

#include <cstring>
#include <regex>

#include "frugal/error.h"

namespace frugal::detail {

std::uint64_t NpyHeader::count() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

namespace {
[[noreturn]] void bad(const std::string& where, const std::string& found) {
  fail(ErrorKind::invalid, where, "a .npy array (NumPy format 1-3, C order)", found,
       "re-save it with numpy.save(path, array)");
}
}  // namespace

NpyHeader parse_npy(std::span<const std::uint8_t> b, const std::string& where) {
  if (b.size() < 10 || b[0] != 0x93 || std::memcmp(b.data() + 1, "NUMPY", 5) != 0) bad(where, "no NUMPY magic");
  int major = b[6];
  std::size_t len, off;
  if (major == 1) {
    len = b[8] | (b[9] << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) bad(where, "a truncated header");
    len = b[8] | (b[9] << 8) | (b[10] << 16) | (static_cast<std::size_t>(b[11]) << 24);
    off = 12;
  } else {
    bad(where, "format version " + std::to_string(major));
  }
  if (off + len > b.size()) bad(where, "a truncated header");
  std::string dict(reinterpret_cast<const char*>(b.data() + off), len);
  NpyHeader h;
  h.data_offset = off + len;
  std::smatch m;
  if (!std::regex_search(dict, m, std::regex(R"('descr'\s*:\s*'([<>|=])([uifb])(\d+)')"))) bad(where, "header " + dict);
  h.big_endian = m[1] == ">";
  h.kind = m[2].str()[0];
  h.item_size = std::stoi(m[3]);
  if (std::regex_search(dict, std::regex(R"('fortran_order'\s*:\s*True)"))) bad(where, "Fortran order");
  if (!std::regex_search(dict, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) bad(where, "no shape in " + dict);
  std::string dims = m[1];
  static const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    h.shape.push_back(std::stoll(it->str()));
  if (h.item_size <= 0 || h.item_size > 8) bad(where, "element size " + std::to_string(h.item_size));
  if (h.count() * h.item_size > b.size() - h.data_offset)
    bad(where, "less data than its shape needs (truncated file?)");
  return h;
}

std::int64_t npy_int(const NpyHeader& h, std::span<const std::uint8_t> b, std::uint64_t i) {
  const std::uint8_t* p = b.data() + h.data_offset + i * h.item_size;
  std::uint64_t v = 0;
  for (int k = 0; k < h.item_size; ++k) {
    int byte = h.big_endian ? k : h.item_size - 1 - k;
    v = (v << 8) | p[byte];
  }
  if (h.kind == 'i' && h.item_size < 8 && (v >> (h.item_size * 8 - 1)) & 1) v |= ~0ULL << (h.item_size * 8);
  return static_cast<std::int64_t>(v);
}

void npy_image(std::span<const std::uint8_t> data, const std::vector<std::int64_t>& s, const std::string& where,
               Image& out) {
  auto is_c = [](std::int64_t c) { return c == 1 || c == 3 || c == 4; };
  int h, w, c;
  bool channels_first = false;
  if (s.size() == 2) {
    h = int(s[0]), w = int(s[1]), c = 1;
  } else if (s.size() == 3 && is_c(s[2])) {
    h = int(s[0]), w = int(s[1]), c = int(s[2]);
  } else if (s.size() == 3 && is_c(s[0])) {
    c = int(s[0]), h = int(s[1]), w = int(s[2]);
    channels_first = true;
  } else {
    std::string shape;
    for (auto d : s) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    fail(ErrorKind::unsupported, where, "image samples of shape (H, W), (H, W, C) or (C, H, W)", "(" + shape + ")",
         "reshape the array");
  }
  int oc = c == 1 ? 1 : 3;
  out.resize(w, h, oc);
  std::size_t plane = static_cast<std::size_t>(h) * w;
  for (std::size_t p = 0; p < plane; ++p)
    for (int k = 0; k < oc; ++k)
      out.pixels[p * oc + k] = channels_first ? data[k * plane + p] : data[p * c + k];
}

}  // namespace frugal::detail
