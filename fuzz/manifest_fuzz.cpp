// libFuzzer target for the split manifest (JSON from a download): any input must load into a
// manifest whose names stay in its folder and whose part sizes add up without wrapping, or fail
// with frugal::Error (never a JSON library exception, never a crash); what loads must survive
// to_json() and load again unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "archive/manifest.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace {
bool same(const frugal::SplitManifest& a, const frugal::SplitManifest& b) {
  if (a.name != b.name || a.size != b.size || a.sha256 != b.sha256 || a.parts.size() != b.parts.size()) return false;
  for (std::size_t i = 0; i < a.parts.size(); ++i)
    if (a.parts[i].file != b.parts[i].file || a.parts[i].size != b.parts[i].size ||
        a.parts[i].sha256 != b.parts[i].sha256)
      return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  frugal::SplitManifest m;
  try {
    m = frugal::SplitManifest::parse(text, "/fuzz", "fuzz.manifest.json");
  } catch (const frugal::Error&) {
    return 0;
  }
  std::uint64_t sum = 0;
  for (const auto& p : m.parts) {
    if (__builtin_add_overflow(sum, p.size, &sum)) __builtin_trap();
    if (frugal::normalize_relative(p.file) != p.file || p.file.find('/') != std::string::npos) __builtin_trap();
  }
  if (sum != m.size || frugal::normalize_relative(m.name) != m.name || m.name.find('/') != std::string::npos)
    __builtin_trap();
  if (!same(m, frugal::SplitManifest::parse(m.to_json(), "/fuzz", "fuzz.manifest.json"))) __builtin_trap();
  return 0;
}
