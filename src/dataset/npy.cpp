#include "dataset/npy.h"

#include <charconv>
#include <cstring>
#include <string_view>

#include "frugal/util/checked.h"
#include "frugal/util/error.h"

namespace frugal::detail {

std::uint64_t NpyHeader::count() const {
  std::uint64_t n = 1;
  for (auto d : shape) n = checked_mul(n, static_cast<std::uint64_t>(d), "a .npy shape", "the element count");
  return n;
}

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& found) {
  fail(ErrorKind::invalid, where, "a .npy array (NumPy format 1-3, C order)", found,
       "re-save it with numpy.save(path, array)");
}

// The header is a Python dict literal; NumPy reads it with ast.literal_eval. This reads the subset
// numpy.save writes ({'descr': '<u1', 'fortran_order': False, 'shape': (N, H, W), }), by hand
// rather than by std::regex, whose recursive matcher overflows the stack on long headers.
class HeaderReader {
 public:
  HeaderReader(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  NpyHeader read() {
    NpyHeader h;
    bool descr = false, order = false, shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = quoted();
      expect(':');
      if (key == "descr" && !descr) {
        parse_descr(quoted(), h);
        descr = true;
      } else if (key == "fortran_order" && !order) {
        if (word("True")) bad(where_, "Fortran order");
        if (!word("False")) bad(where_, "'fortran_order' that is neither True nor False");
        order = true;
      } else if (key == "shape" && !shape) {
        h.shape = tuple();
        shape = true;
      } else {
        bad(where_, "a header key '" + key + "' (repeated or unknown)");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) bad(where_, "bytes after the header dict");
    if (!descr || !order || !shape) bad(where_, "a header without 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) bad(where_, std::string("a header where '") + c + "' was expected at byte " + std::to_string(pos_));
    ++pos_;
  }
  bool word(std::string_view w) {
    skip_space();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      bad(where_, "a header key or value that is not a string");
    const char q = s_[pos_++];
    const auto end = s_.find(q, pos_);
    if (end == std::string_view::npos) bad(where_, "an unterminated string in the header");
    std::string v(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return v;
  }
  // A non-negative integer (Python 2 wrote 3L), or Error(invalid) when it does not fit int64.
  std::int64_t integer() {
    skip_space();
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (ec == std::errc::result_out_of_range) bad(where_, "a dimension out of range");
    if (ec != std::errc() || v < 0) bad(where_, "a shape entry that is not a non-negative integer");
    pos_ = static_cast<std::size_t>(p - s_.data());
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
    return v;
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> dims;
    expect('(');
    while (!peek(')')) {
      if (dims.size() == 32) bad(where_, "more than 32 dimensions");  // NumPy's limit
      dims.push_back(integer());
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }
  void parse_descr(const std::string& d, NpyHeader& h) {
    std::string_view v = d;
    if (!v.empty() && (v[0] == '<' || v[0] == '>' || v[0] == '|' || v[0] == '=')) {
      h.big_endian = v[0] == '>';
      v.remove_prefix(1);
    }
    if (v.size() < 2 || std::string_view("uifb").find(v[0]) == std::string_view::npos) bad(where_, "dtype '" + d + "'");
    h.kind = v[0];
    int size = 0;
    auto [p, ec] = std::from_chars(v.data() + 1, v.data() + v.size(), size);
    if (ec != std::errc() || p != v.data() + v.size() || size < 1 || size > 8) bad(where_, "dtype '" + d + "'");
    h.item_size = size;
  }

  std::string_view s_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

}  // namespace

std::uint64_t npy_header_size(std::span<const std::uint8_t> b, const std::string& where) {
  if (b.size() < 10 || b[0] != 0x93 || std::memcmp(b.data() + 1, "NUMPY", 5) != 0) bad(where, "no NUMPY magic");
  const int major = b[6];
  if (major == 1) return 10 + (b[8] | (b[9] << 8));
  if (major != 2 && major != 3) bad(where, "format version " + std::to_string(major));
  if (b.size() < 12) bad(where, "a truncated header");
  return 12 + (b[8] | (b[9] << 8) | (b[10] << 16) | (static_cast<std::uint64_t>(b[11]) << 24));
}

NpyHeader parse_npy_header(std::span<const std::uint8_t> b, std::uint64_t file_size, const std::string& where) {
  const std::uint64_t end = npy_header_size(b, where);
  const std::size_t off = b[6] == 1 ? 10 : 12;
  if (end > b.size() || end > file_size) bad(where, "a truncated header");
  std::string_view dict(reinterpret_cast<const char*>(b.data() + off), static_cast<std::size_t>(end) - off);
  NpyHeader h = HeaderReader(dict, where).read();
  h.data_offset = static_cast<std::size_t>(end);
  // Zero-length arrays still need every dimension's product to fit, as NumPy requires.
  std::uint64_t elements = 1;
  bool empty = false;
  for (auto d : h.shape) {
    if (d == 0)
      empty = true;
    else
      elements = checked_mul(elements, static_cast<std::uint64_t>(d), where, "the element count of its shape");
  }
  const std::uint64_t data =
      empty ? 0 : checked_mul(elements, static_cast<std::uint64_t>(h.item_size), where, "the byte size of its shape");
  if (data > static_cast<std::uint64_t>(INT64_MAX)) bad(where, "a shape of more than 2^63 bytes");
  if (data > file_size - h.data_offset) bad(where, "less data than its shape needs (truncated file?)");
  return h;
}

NpyHeader parse_npy(std::span<const std::uint8_t> b, const std::string& where) {
  return parse_npy_header(b, b.size(), where);
}

std::int64_t npy_int(const NpyHeader& h, std::span<const std::uint8_t> b, std::uint64_t i) {
  if (i >= h.count()) bad("npy_int", "element " + std::to_string(i) + " of " + std::to_string(h.count()));
  const std::uint8_t* p = b.data() + h.data_offset + i * h.item_size;
  std::uint64_t v = 0;
  for (int k = 0; k < h.item_size; ++k) {
    int byte = h.big_endian ? k : h.item_size - 1 - k;
    v = (v << 8) | p[byte];
  }
  if (h.kind == 'i' && h.item_size < 8 && (v >> (h.item_size * 8 - 1)) & 1) v |= ~0ULL << (h.item_size * 8);
  return static_cast<std::int64_t>(v);
}

NpyImageShape npy_image_shape(const std::vector<std::int64_t>& s, const std::string& where) {
  auto is_c = [](std::int64_t c) { return c == 1 || c == 3 || c == 4; };
  std::int64_t h = 0, w = 0, c = 1;
  bool channels_first = false;
  if (s.size() == 2) {
    h = s[0], w = s[1];
  } else if (s.size() == 3 && is_c(s[2])) {
    h = s[0], w = s[1], c = s[2];
  } else if (s.size() == 3 && is_c(s[0])) {
    c = s[0], h = s[1], w = s[2];
    channels_first = true;
  } else {
    std::string shape;
    for (auto d : s) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    fail(ErrorKind::unsupported, where, "image samples of shape (H, W), (H, W, C) or (C, H, W)", "(" + shape + ")",
         "reshape the array");
  }
  if (h <= 0 || w <= 0) bad(where, "an image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels");
  NpyImageShape r;
  r.height = checked_cast<int>(h, where, "an image side");
  r.width = checked_cast<int>(w, where, "an image side");
  r.channels = static_cast<int>(c);
  r.channels_first = channels_first;
  checked_mul(checked_mul(static_cast<std::size_t>(r.height), static_cast<std::size_t>(r.width), where),
              static_cast<std::size_t>(r.channels), where);
  return r;
}

void npy_image(std::span<const std::uint8_t> data, const std::vector<std::int64_t>& s, const std::string& where,
               Image& out) {
  const NpyImageShape g = npy_image_shape(s, where);
  if (data.size() < g.bytes())
    bad(where, std::to_string(data.size()) + " bytes for an image that needs " + std::to_string(g.bytes()));
  const int c = g.channels, oc = c == 1 ? 1 : 3;
  out.resize(g.width, g.height, oc);
  const std::size_t plane = static_cast<std::size_t>(g.height) * g.width;
  for (std::size_t p = 0; p < plane; ++p)
    for (int k = 0; k < oc; ++k) out.pixels[p * oc + k] = g.channels_first ? data[k * plane + p] : data[p * c + k];
}

}  // namespace frugal::detail
