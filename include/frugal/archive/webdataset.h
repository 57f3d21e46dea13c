// WebDataset shard sets: the shards a pattern names, and their members grouped into samples as the
// webdataset library groups them (tariterators.py: tar_file_iterator, group_by_keys), so that a
// set written for PyTorch trains here on the same samples.
//
// Archive::open(pattern) reads the shards as one archive (format "webdataset"): each shard's tar
// is indexed (and cached) on its own, read in place, and its members are named
// "<shard file name>/<member name>", so that keys repeated in two shards stay two entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/archive/archive.h"

namespace frugal {

class Archive;

// The shards of "shards-{000000..000099}.tar" (brace expansion as Python's braceexpand does it:
// lists {a,b}, ranges {0..9}, {a..e}, steps {0..10..2}, zero padding when either end has a
// leading zero, nesting, '\' escapes), several patterns joined by "::" (as webdataset splits
// them), and globs (* ? [...], matched in the file system, sorted). At most 100,000 names.
// Throws Error(usage) naming the first shard that does not exist (and how many are missing), a
// glob that matches nothing, or unbalanced braces.
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

// Brace expansion alone, without looking at files (the part the tests hold to braceexpand's).
std::vector<std::string> expand_braces(const std::string& pattern);

struct WebDatasetSample {
  std::string key;           // the member path up to the first dot of its base name
  std::uint32_t shard = 0;   // index of its shard, in pattern order
  std::size_t image = 0;     // archive entry of the image member
  std::string image_suffix;  // "jpg", "png", ... (lower case)
  // Every member of the sample, (suffix in lower case, entry), in member order.
  std::vector<std::pair<std::string, std::size_t>> members;
  // The label, from the first of these members the sample has: .cls (an integer), a .json object's
  // "label" (else "cls", else "class") field, .txt (its text, spaces trimmed).
  std::optional<std::int64_t> class_index;  // .cls, or a JSON integer
  std::string class_name;                   // .txt, or a JSON string
  std::string label_suffix;                 // "cls", "json", "txt"; "" when the sample has no label
  std::string label_problem;                // why the label member could not be read, else ""
};

struct WebDatasetSamples {
  std::vector<WebDatasetSample> samples;  // in shard order, then member order
  // Members or samples left out, by reason ("no image member", "not a sample member (no '.' in
  // its name)", "metadata (__...__)", "not a file (link, folder, device)"), with an example each.
  std::map<std::string, std::uint64_t> skipped;
  std::map<std::string, std::string> examples;
};

// Image suffixes a sample's image is taken from, in order of preference.
inline constexpr std::string_view kWebDatasetImageSuffixes[] = {"jpg", "jpeg", "png", "webp", "gif", "bmp",
                                                                "tif", "tiff", "ppm", "pgm",  "pbm", "pnm"};

// Groups every shard of `archive` (an archive opened from a shard pattern or a single tar; any other
// archive is one shard in entry order). Members of one key must be adjacent, as webdataset requires:
// a key met again later starts a new sample. Two members of one sample with the same suffix are
// Error(invalid) naming both, as webdataset raises. Label members are read (at most 64 KiB each).
WebDatasetSamples group_webdataset(const Archive& archive);

// The samples' labels as the dataset takes a reader's labels (archive.h's EntryLabels): an image
// member's entry gets its sample's .cls integer or its text label; the samples' other members are
// sample_member; samples without an image, and label members that could not be read, are counted
// in `skipped` by reason.
EntryLabels webdataset_labels(const Archive& archive);

namespace detail {

// What the grouping sees of one member.
struct WebDatasetMember {
  std::string_view name;  // within its shard
  std::uint32_t shard = 0;
  std::size_t entry = 0;
  bool regular = true;  // a file (webdataset skips anything else)
};

// webdataset's base_plus_ext: (key, suffix) or nullopt when the name has none (the regular expression
// ^((?:.*/|)[^.]+)[.]([^/]*)$ with Python's semantics, '$' matching before a final newline too).
std::optional<std::pair<std::string_view, std::string_view>> base_plus_ext(std::string_view name);
// tar_file_iterator's metadata rule: "__x__" at the top, or a path matching __[^/]*__($|/).
bool is_webdataset_meta(std::string_view name);

// The grouping over members in order; read(entry, limit) returns a label member's bytes, or
// nullopt when it is larger than `limit`. Throws Error(invalid) for a duplicate suffix, naming it
// with where(shard).
WebDatasetSamples group_members(
    const std::vector<WebDatasetMember>& members,
    const std::function<std::optional<std::string>(std::size_t entry, std::size_t limit)>& read,
    const std::function<std::string(std::uint32_t shard)>& where);

}  // namespace detail

}  // namespace frugal
