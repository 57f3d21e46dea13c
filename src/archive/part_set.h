// Finding the files of a split set from the name the user gave (CLI.md, "ARCHIVE").
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace frugal {

struct PartSet {
  enum class Kind {
    single,       // one plain file
    manifest,     // a frugal-split manifest: parts and their sizes come from it
    numbered,     // NAME.part0000… without a manifest, or plain `split` parts NAME_aa…, NAME.000…
    zip_spanned,  // `zip -s`: NAME.z01, NAME.z02, …, NAME.zip (offsets are per part)
  };
  Kind kind = Kind::single;
  std::vector<std::filesystem::path> files;
  // Sizes the manifest promises (Kind::manifest only), checked when the set is opened.
  std::vector<std::uint64_t> expected_sizes;
};

// Throws Error(usage) when the name is missing, a folder or unreadable (check_input: a missing NAME
// with NAME.manifest.json beside it is read through the manifest), Error(invalid) when the name is a
// later part of a set, or a set has a gap.
PartSet find_part_set(const std::filesystem::path& path);

}  // namespace frugal
