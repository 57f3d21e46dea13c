#include "archive/tar_index.h"

#include <cstring>
#include <optional>
#include <string_view>

#include "archive/name_encoding.h"
#include "archive/tar_format.h"
#include "frugal/util/error.h"
#include "frugal/util/terminal.h"

namespace frugal {

using namespace tar;

namespace {

// What the extension records before a member said about it.
struct Pending {
  std::uint64_t first_header = 0;
  bool any = false;
  std::optional<std::string> long_name, long_link;  // GNU 'L' / 'K'
  bool pax = false;
  std::optional<std::string> path, sparse_name;
  std::optional<std::uint64_t> size;
  bool sparse = false;
  bool binary = false;  // hdrcharset=BINARY: the PAX path is bytes, not UTF-8
};

class TarParser {
 public:
  TarParser(const ByteSource& src, std::uint64_t begin, std::uint64_t end, const std::string& where)
      : src_(src), begin_(begin), end_(end), where_(where) {}

  std::vector<TarRecord> run() {
    std::vector<TarRecord> out;
    std::uint64_t pos = begin_;
    Pending p;
    while (pos < end_) {
      if (end_ - pos < kBlock)
        bad(pos, "a whole 512-byte header", std::to_string(end_ - pos) + " bytes before the end of the file",
            "the tar is truncated; copy it again");
      const std::uint8_t* h = block(pos);
      if (is_zero_block(h)) {
        if (p.any) bad(p.first_header, "a member after its extended header", "the end of the archive", crafted());
        break;  // end of archive; what follows (padding to a record) is not read, as tar does
      }
      if (!checksum_ok(h))
        bad(pos, "a tar header whose checksum matches its bytes", "a header that does not",
            pos == begin_ ? "the file is damaged or not a tar" : "the tar is damaged; copy it again");
      const auto declared = parse_number(h + kSize, kSizeLen);
      if (!declared) bad(pos, "a size field of octal digits", "other bytes", "the tar is damaged or crafted");
      const char type = static_cast<char>(h[kType]);
      const std::uint64_t data = pos + kBlock;
      if (!p.any) p.first_header = pos;
      std::uint64_t size = *declared;
      const bool extension = type == 'L' || type == 'K' || type == 'x' || type == 'X' || type == 'g';
      if (!extension && p.size) size = *p.size;
      check_inside(pos, data, size);
      if (extension) {
        extension_record(type, pos, data, size, p);
        pos = next_header(data, size);
        continue;
      }
      std::uint64_t data_at = data;
      if (type == 'S') data_at = skip_sparse_blocks(pos, h, size);
      TarRecord r = member(h, type, pos, p);
      r.data_offset = data_at;
      if (!carries_data(type)) {
        if (size != 0)
          bad(pos, "no data for " + kind_words(r.kind) + " member '" + printable(r.name) + "'",
              std::to_string(size) + " data bytes declared",
              "readers disagree where the next member starts; the tar is damaged or crafted: do not use it");
        r.size = 0;
        pos = data;
      } else {
        r.size = size;
        pos = next_header(data_at, size);
      }
      p = Pending{};
      // The root itself ("./", "."): names no member.
      if (r.name.empty() && r.kind == TarKind::dir) continue;
      out.push_back(std::move(r));
    }
    if (p.any) bad(p.first_header, "a member after its extended header", "the end of the file", crafted());
    return out;
  }

 private:
  static std::string crafted() { return "the tar is damaged or crafted; do not use it"; }

  [[noreturn]] void bad(std::uint64_t pos, const std::string& expected, const std::string& found,
                        const std::string& hint) const {
    src_.check_intact();
    fail(ErrorKind::invalid, where_ + " (header at offset " + std::to_string(pos) + ")", expected, found, hint);
  }

  const std::uint8_t* block(std::uint64_t pos) {
    if (auto v = src_.view(pos, kBlock)) return v->data();
    src_.read_at(pos, copy_, kBlock);
    return copy_;
  }

  // Data runs from `data` for `size` bytes and must end inside the tar; its padding may be missing
  // at the very end (some writers stop there).
  void check_inside(std::uint64_t pos, std::uint64_t data, std::uint64_t size) const {
    if (data > end_ || size > end_ - data)
      bad(pos, std::to_string(size) + " data bytes inside the file",
          "a member running " + std::to_string(size - std::min(size, end_ - std::min(end_, data))) +
              " bytes past its end",
          "the tar is truncated (or its header lies); copy it again");
  }

  std::uint64_t next_header(std::uint64_t data, std::uint64_t size) const {
    const std::uint64_t next = data + round_up_block(size);
    return next > end_ ? end_ : next;
  }

  static bool carries_data(char type) {
    return !(type == '1' || type == '2' || type == '3' || type == '4' || type == '5' || type == '6');
  }

  static std::string kind_words(TarKind k) {
    switch (k) {
      case TarKind::file:
        return "a file";
      case TarKind::dir:
        return "a folder";
      case TarKind::symlink:
        return "a symbolic link";
      case TarKind::hard_link:
        return "a hard link";
      case TarKind::device:
        return "a device";
      case TarKind::fifo:
        return "a FIFO";
      case TarKind::sparse:
        return "a sparse file";
      case TarKind::other:
        return "an unknown";
    }
    return "a";
  }

  std::string read_string(std::uint64_t data, std::uint64_t size) const {
    std::string s(static_cast<std::size_t>(size), '\0');
    if (size) src_.read_at(data, s.data(), s.size());
    return s;
  }

  void extension_record(char type, std::uint64_t pos, std::uint64_t data, std::uint64_t size, Pending& p) {
    p.any = true;
    if (type == 'L' || type == 'K') {
      auto& slot = type == 'L' ? p.long_name : p.long_link;
      if (slot) bad(pos, "one GNU long-name record per member", "two", crafted());
      if (size == 0 || size > kMaxTarName + 1)
        bad(pos, "a GNU long name of 1 to " + std::to_string(kMaxTarName) + " bytes",
            "a record of " + std::to_string(size) + " bytes", crafted());
      std::string s = read_string(data, size);
      const std::size_t nul = s.find('\0');
      if (nul != std::string::npos) {
        // GNU tar and Python write the name and one NUL: anything after it means the record's
        // size does not describe the name.
        if (s.find_first_not_of('\0', nul) != std::string::npos)
          bad(pos, "a GNU long name that fills its record", "bytes after the name's end", crafted());
        s.resize(nul);
      }
      slot = std::move(s);
      return;
    }
    if (size > kMaxPaxHeader)
      bad(pos, "a PAX header of at most " + std::to_string(kMaxPaxHeader) + " bytes", std::to_string(size) + " bytes",
          "frugal reads names and sizes from PAX headers, not large metadata");
    const std::string buf = read_string(data, size);
    if (type == 'g') {  // global: checked, then nothing in it changes where members are or what they are called
      Pending ignored;
      parse_pax(pos, buf, ignored);
      if (ignored.path || ignored.size)
        bad(pos, "a global PAX header without 'path' or 'size'", "one that sets them for every member", crafted());
      return;
    }
    if (p.pax) bad(pos, "one PAX header per member", "two", crafted());
    p.pax = true;
    parse_pax(pos, buf, p);
  }

  // Records "LEN KEY=VALUE\n", LEN counting the whole record (POSIX.1-2001, pax). Trailing NULs
  // (padding some writers count in the size) are allowed.
  void parse_pax(std::uint64_t pos, std::string_view buf, Pending& p) const {
    std::size_t at = 0;
    while (at < buf.size()) {
      if (buf[at] == '\0') {
        if (buf.find_first_not_of('\0', at) != std::string_view::npos)
          bad(pos, "PAX records", "bytes after a NUL", crafted());
        return;
      }
      std::size_t digits = 0;
      std::uint64_t len = 0;
      while (at + digits < buf.size() && buf[at + digits] >= '0' && buf[at + digits] <= '9' && digits < 19)
        len = len * 10 + static_cast<std::uint64_t>(buf[at + digits++] - '0');
      if (digits == 0 || at + digits >= buf.size() || buf[at + digits] != ' ' || len < digits + 4 ||
          len > buf.size() - at || buf[at + len - 1] != '\n')
        bad(pos, "a PAX record 'LENGTH KEY=VALUE\\n' at byte " + std::to_string(at), "a malformed one", crafted());
      const std::string_view kv = buf.substr(at + digits + 1, len - digits - 2);
      const std::size_t eq = kv.find('=');
      if (eq == 0 || eq == std::string_view::npos)
        bad(pos, "KEY=VALUE in a PAX record", "'" + std::string(kv.substr(0, 40)) + "'", crafted());
      apply_pax(pos, kv.substr(0, eq), kv.substr(eq + 1), p);
      at += len;
    }
  }

  void apply_pax(std::uint64_t pos, std::string_view key, std::string_view value, Pending& p) const {
    if (key == "path" || key == "GNU.sparse.name") {
      if (value.size() > kMaxTarName)
        bad(pos, "a PAX path of at most " + std::to_string(kMaxTarName) + " bytes",
            std::to_string(value.size()) + " bytes", crafted());
      (key == "path" ? p.path : p.sparse_name) = std::string(value);
      if (key != "path") p.sparse = true;
    } else if (key == "size") {
      std::uint64_t v = 0;
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos)
        bad(pos, "a decimal PAX size", "'" + std::string(value.substr(0, 40)) + "'", crafted());
      for (char c : value) v = v * 10 + static_cast<std::uint64_t>(c - '0');
      p.size = v;
    } else if (key == "hdrcharset") {
      p.binary = value == "BINARY";
    } else if (key.starts_with("GNU.sparse.")) {
      p.sparse = true;
    }
  }

  // Old GNU sparse members ('S'): more sparse-map blocks follow the header while its flag says so.
  std::uint64_t skip_sparse_blocks(std::uint64_t pos, const std::uint8_t* h, std::uint64_t size) {
    std::uint64_t at = pos + kBlock;
    bool more = h[kGnuIsExtended] != 0;
    while (more) {
      if (end_ - at < kBlock)
        bad(pos, "the sparse map's blocks", "the end of the file", "the tar is truncated; copy it again");
      more = block(at)[kGnuExtIsExtended] != 0;
      at += kBlock;
    }
    check_inside(pos, at, size);
    return at;
  }

  TarRecord member(const std::uint8_t* h, char type, std::uint64_t pos, const Pending& p) {
    TarRecord r;
    r.header_offset = p.any ? p.first_header : pos;
    auto field = [&](std::size_t at, std::size_t n) {
      const char* s = reinterpret_cast<const char*>(h + at);
      return std::string(s, strnlen(s, n));
    };
    std::string name = field(kName, kNameLen);
    if (is_posix_ustar(h)) {
      const std::string prefix = field(kPrefix, kPrefixLen);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (p.long_name) name = *p.long_name;
    if (p.path || p.sparse_name) {
      const std::string& pax = p.sparse_name ? *p.sparse_name : *p.path;
      if (p.long_name && *p.long_name != pax)
        bad(pos, "one name per member", "a GNU long name and a different PAX path", crafted());
      name = pax;
      r.utf8 = !p.binary;
    }
    switch (type) {
      case '0':
      case '\0':
      case '7':
        r.kind = TarKind::file;
        break;
      case '1':
        r.kind = TarKind::hard_link;
        break;
      case '2':
        r.kind = TarKind::symlink;
        break;
      case '3':
      case '4':
        r.kind = TarKind::device;
        break;
      case '5':
        r.kind = TarKind::dir;
        break;
      case '6':
        r.kind = TarKind::fifo;
        break;
      case 'S':
        r.kind = TarKind::sparse;
        break;
      default:
        r.kind = TarKind::other;
        break;
    }
    if (p.sparse && r.kind == TarKind::file) r.kind = TarKind::sparse;
    // v7's folder: a file whose name ends with '/'.
    if (type == '\0' && !name.empty() && name.back() == '/') r.kind = TarKind::dir;
    while (name.size() >= 2 && name[0] == '.' && name[1] == '/') name.erase(0, 2);
    if (r.kind == TarKind::dir) {
      if (name == ".") name.clear();
      if (!name.empty() && name.back() != '/') name += '/';
    }
    r.name = std::move(name);
    return r;
  }

  const ByteSource& src_;
  const std::uint64_t begin_, end_;
  const std::string& where_;
  std::uint8_t copy_[kBlock];
};

}  // namespace

std::vector<TarRecord> parse_tar(const ByteSource& src, std::uint64_t begin, std::uint64_t end,
                                 const std::string& where) {
  return TarParser(src, begin, end, where).run();
}

ZipEntry tar_entry(const TarRecord& r, const std::string& prefix, NameDecoder& decoder) {
  ZipEntry e;
  e.raw_name = prefix + r.name;
  std::string decoded;
  e.name_is_utf8 = decoder.decode(r.name, r.utf8, decoded);
  e.name = prefix + decoded;
  e.size = e.compressed_size = r.size;
  e.local_header_offset = r.header_offset;
  e.has_crc32 = false;
  e.is_dir = r.kind == TarKind::dir || (!r.name.empty() && r.name.back() == '/');
  e.is_symlink = r.kind == TarKind::symlink;
  switch (r.kind) {
    case TarKind::hard_link:
      e.special = SpecialMember::hard_link;
      break;
    case TarKind::device:
      e.special = SpecialMember::device;
      break;
    case TarKind::fifo:
      e.special = SpecialMember::fifo;
      break;
    case TarKind::sparse:
      e.special = SpecialMember::sparse;
      break;
    case TarKind::other:
      e.special = SpecialMember::other;
      break;
    default:
      break;
  }
  return e;
}

}  // namespace frugal
