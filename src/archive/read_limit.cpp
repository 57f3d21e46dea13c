#include "frugal/archive/read_limit.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

// Thrown by read_entry_head's sink to stop Archive::read_to once it has what it asked for.
struct EnoughBytes {};

std::string size_text(std::uint64_t size) {
  return format_size(size) + (size >= 1024 ? " (" + std::to_string(size) + " bytes)" : "");
}

}  // namespace

std::string file_size_skip_reason(std::uint64_t size, std::uint64_t max_bytes) {
  if (size <= max_bytes) return "";
  return spell_settings("larger than {max_file_bytes} (" + format_size(max_bytes) + ")");
}

void check_file_size(const std::string& where, std::uint64_t size, std::uint64_t max_bytes) {
  if (size <= max_bytes) return;
  fail(ErrorKind::invalid, where, "a file of at most " + format_size(max_bytes) + " ({max_file_bytes})",
       size_text(size),
       "an image or array this large is rarely genuine (a photo followed by other data); raise {max_file_bytes} "
       "if it is");
}

void read_entry_capped(const Archive& a, std::size_t i, std::vector<std::uint8_t>& out, std::uint64_t max_bytes) {
  const ZipEntry& e = a.entries().at(i);
  check_file_size(a.display_name() + ":" + e.name, e.size, max_bytes);
  a.read(i, out);
}

std::vector<std::uint8_t> read_entry_head(const Archive& a, std::size_t i, std::size_t n) {
  const ZipEntry& e = a.entries().at(i);
  const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(n, e.size));
  if (auto v = a.stored_view(i)) {
    const auto head = v->first(std::min(want, v->size()));
    return std::vector<std::uint8_t>(head.begin(), head.end());
  }
  std::vector<std::uint8_t> head;
  head.reserve(want);
  try {
    a.read_to(i, [&](std::span<const std::uint8_t> piece) {
      const std::size_t take = std::min(piece.size(), want - head.size());
      head.insert(head.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(take));
      if (head.size() == want) throw EnoughBytes{};
    });
  } catch (const EnoughBytes&) {}
  return head;
}

std::vector<std::uint8_t> read_file_capped(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const UniqueFd fd = open_regular(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("stat", path.string(), errno);
  check_file_size(path.string(), static_cast<std::uint64_t>(st.st_size), max_bytes);
  // One byte past the cap tells a file that grew while read (or has no size) from one that fits.
  const std::uint64_t limit = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(std::min<std::uint64_t>(st.st_size + 1, limit)));
  std::size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (out.size() >= limit) break;
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(limit, out.size() * 2 + 4096)));
    }
    const ssize_t r = ::read(fd.get(), out.data() + done, out.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail_errno("read", path.string(), errno);
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  check_file_size(path.string(), done, max_bytes);
  out.resize(done);
  return out;
}

}  // namespace frugal
