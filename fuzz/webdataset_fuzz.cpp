// libFuzzer target for the WebDataset grouping and shard patterns. The input is a list of members,
// each "<flags byte><name>\x01<content>" and separated by "\x00\x00": flags bit 0 starts a new shard,
// bit 1 makes the member a link (not a file). Label members (.cls, .txt, .json) are parsed from the
// content. The first member's name is also expanded as a shard pattern. Any input must group or fail
// with frugal::Error; never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/archive/webdataset.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> names, contents;
  std::vector<frugal::detail::WebDatasetMember> members;
  std::uint32_t shard = 0;
  for (std::size_t at = 0; at < in.size() && members.size() < 4096;) {
    std::size_t end = in.find(std::string_view("\0\0", 2), at);
    if (end == std::string_view::npos) end = in.size();
    std::string_view rec = in.substr(at, end - at);
    at = end + 2;
    if (rec.empty()) continue;
    const std::uint8_t flags = static_cast<std::uint8_t>(rec[0]);
    rec.remove_prefix(1);
    const std::size_t sep = rec.find('\x01');
    names.emplace_back(rec.substr(0, sep));
    contents.emplace_back(sep == std::string_view::npos ? std::string_view() : rec.substr(sep + 1));
    if (flags & 1) ++shard;
    members.push_back({{}, shard, members.size(), (flags & 2) == 0});
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    members[i].name = names[i];
    // The rules hold on every name: a key is a prefix of the name, and a suffix has no '/'.
    if (const auto kx = frugal::detail::base_plus_ext(names[i])) {
      if (names[i].compare(0, kx->first.size(), kx->first) != 0) __builtin_trap();
      if (kx->second.find('/') != std::string_view::npos) __builtin_trap();
    }
    (void)frugal::detail::is_webdataset_meta(names[i]);
  }
  try {
    const auto samples = frugal::detail::group_members(
        members,
        [&](std::size_t entry, std::size_t limit) -> std::optional<std::string> {
          if (contents.at(entry).size() > limit) return std::nullopt;
          return contents[entry];
        },
        [](std::uint32_t s) { return "shard-" + std::to_string(s); });
    for (const auto& s : samples.samples) {
      if (s.image >= members.size() || !members[s.image].regular) __builtin_trap();
      if (s.class_index && *s.class_index < 0) __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  if (!names.empty() && names[0].size() < 256) {
    try {
      (void)frugal::expand_braces(names[0]);
    } catch (const frugal::Error&) {}
  }
  return 0;
}
