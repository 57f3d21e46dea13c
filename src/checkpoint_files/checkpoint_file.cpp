// Checkpoint file names, the payload checksum and its verification, and listing a run's
// checkpoints: torch-free, for `frugal du` / `frugal clean` as much as for the loader.
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string_view>

#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

std::string checksum_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// verify_checkpoint_file() for a header already read (so a listing parses each header once).
std::string verify_with_header(const fs::path& path, const SafetensorsHeader& h, Links links) {
  auto get = [&](const char* k) {
    auto it = h.metadata.find(k);
    return it == h.metadata.end() ? std::string() : it->second;
  };
  if (get("format") != kCheckpointFormat)
    return "metadata \"format\" is \"" + get("format") + "\", expected \"" + kCheckpointFormat + "\"";
  if (get("version") != std::to_string(kCheckpointVersion) &&
      get("version") != std::to_string(kCheckpointVersionMultiLabel))
    return "format version \"" + get("version") + "\" is not one of the supported " +
           std::to_string(kCheckpointVersion) + " and " + std::to_string(kCheckpointVersionMultiLabel);
  UniqueFd fd = open_regular(path, links);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) fail_errno("stat", path.string(), errno);
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size != h.payload_offset() + h.payload_size)
    return "file size " + std::to_string(size) + " differs from the " +
           std::to_string(h.payload_offset() + h.payload_size) + " bytes its header describes";
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<char> buf(1 << 20);
  for (std::uint64_t off = 0; off < h.payload_size;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), h.payload_size - off));
    pread_full(fd.get(), buf.data(), n, h.payload_offset() + off, path.string());
    XXH3_64bits_update(st, buf.data(), n);
    off += n;
  }
  std::string sum = "xxh3-64:" + checksum_hex(XXH3_64bits_digest(st));
  XXH3_freeState(st);
  if (get("checksum") != sum) return "checksum " + sum + " does not match the recorded \"" + get("checksum") + "\"";
  return "";
}

}  // namespace

std::string checkpoint_file_name(std::int64_t epoch, std::int64_t step, bool delta) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "ckpt-e%04lld-s%06lld%s.safetensors", static_cast<long long>(epoch),
                static_cast<long long>(step), delta ? ".delta" : "");
  return buf;
}

namespace {
// The run of `min` to 18 digits at the front of `s` as a number (18 always fit), `s` moved past it.
std::optional<std::int64_t> take_number(std::string_view& s, std::size_t min) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n < min || n > 18) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = v * 10 + (s[i] - '0');
  s.remove_prefix(n);
  return v;
}
}  // namespace

// ckpt-e<4..18 digits>-s<6..18 digits>[.delta].safetensors, exactly (what checkpoint_file_name
// writes, with room for larger numbers).
std::optional<CheckpointName> parse_checkpoint_name(const std::string& file_name) {
  std::string_view s = file_name;
  auto skip = [&s](std::string_view lit) {
    if (!s.starts_with(lit)) return false;
    s.remove_prefix(lit.size());
    return true;
  };
  if (!skip("ckpt-e")) return std::nullopt;
  const auto epoch = take_number(s, 4);
  if (!epoch || !skip("-s")) return std::nullopt;
  const auto step = take_number(s, 6);
  if (!step) return std::nullopt;
  const bool delta = skip(".delta");
  if (s != ".safetensors") return std::nullopt;
  return CheckpointName{*epoch, *step, delta};
}

std::string payload_checksum(const void* data, std::size_t n) { return "xxh3-64:" + checksum_hex(xxh3_64(data, n)); }

std::string verify_checkpoint_file(const fs::path& path) {
  try {
    return verify_with_header(path, read_safetensors_header(path), Links::follow);
  } catch (const Error& e) {
    return e.what();
  }
}

std::vector<CheckpointEntry> list_checkpoints(const fs::path& run, bool verify) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run, ec)) {
    auto name = parse_checkpoint_name(e.path().filename().string());
    std::error_code kind_ec;
    if (!name || e.symlink_status(kind_ec).type() == fs::file_type::directory) continue;
    CheckpointEntry c;
    c.path = e.path();
    c.name = *name;
    try {
      // Files of the run folder itself: a link is not followed out of it, a FIFO not waited on.
      auto h = read_safetensors_header(c.path, Links::refuse);
      auto& md = h.metadata;
      if (md.count("metric_value") && !md["metric_value"].empty()) c.metric = std::stod(md["metric_value"]);
      c.higher_is_better = md["metric_mode"] != "min";
      c.base = md["base"];
      try {
        c.problem = verify ? verify_with_header(c.path, h, Links::refuse) : "";
      } catch (const Error& ex) {
        c.problem = ex.what();
      }
      if (c.problem.empty() && md["format"] != kCheckpointFormat) c.problem = "not a frugal checkpoint";
      c.valid = c.problem.empty();
    } catch (const std::exception& ex) {
      c.problem = ex.what();
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) {
    if (a.name.step != b.name.step) return a.name.step > b.name.step;
    if (a.name.epoch != b.name.epoch) return a.name.epoch > b.name.epoch;
    return a.name.delta < b.name.delta;  // a full checkpoint before a delta of the same step
  });
  return out;
}

}  // namespace frugal
