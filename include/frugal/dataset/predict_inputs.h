// The images `frugal predict` is given, found in place (torch-free, so that the expansion is tested
// and fuzzed without LibTorch). An INPUT is, in this order:
//   - a file that exists: an image (by its extension, else its bytes) is one image; anything else is
//     DATA (a zip, a tar, a split set, ...) and every image in it is predicted;
//   - a folder: every image under it;
//   - ARCHIVE:GLOB (a '*', '?' or '[' after the last ':' that leaves existing data before it):
//     the entries whose names match GLOB (entry_glob_match), e.g. test.zip:test/*.jpg;
//   - ARCHIVE:entry, as predict always took it: that one image; DATA:SUB/ and DATA:INNER.zip (data.md)
//     are DATA, every image in it;
//   - a WebDataset shard pattern (data_source.h): every sample's image.
// Images found in a folder or an archive come in sorted (byte) order of their entry names. Files
// that are not images there (junk, CSVs, empty files, HEIC, ...) are skipped and counted by the
// reasons training counts them by (SkipReport); a file given by name is always tried, so that
// what is wrong with it is said.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/archive/read_limit.h"
#include "frugal/dataset/dataset.h"
#include "frugal/util/error.h"

namespace frugal {

struct PredictImage {
  // As shown on the terminal, in --json and in messages: the path given, FOLDER/entry for an image
  // in a folder, ARCHIVE:entry for one in an archive (what predict takes back as an INPUT).
  std::string name;
  // The file name without its last extension ("test/1a2b.jpg" -> "1a2b"): a submission's id.
  std::string id;
  const Archive* archive = nullptr;  // nullptr: `name` is a file on disk
  std::size_t entry = 0;
};

// An INPUT that names nothing predict can read, with the error that says why.
struct PredictInputProblem {
  std::string input;
  ErrorKind kind;
  std::string what;
};

class PredictInputs {
 public:
  // Every INPUT expanded in the order given. An INPUT that cannot be read (missing, damaged, a glob
  // that matches nothing, data without an image) is kept in problems() and the others expanded
  // still, so that one wrong path costs no answers.
  static PredictInputs expand(const std::vector<std::string>& inputs, const ArchiveOptions& options = {});

  const std::vector<PredictImage>& images() const { return images_; }
  const std::vector<PredictInputProblem>& problems() const { return problems_; }
  // Per INPUT that skipped files: the INPUT and what was skipped, by reason.
  const std::vector<std::pair<std::string, SkipReport>>& skipped() const { return skipped_; }
  // Every file on disk that was read: image files and the files of each archive (its parts), for a
  // writer that must never replace one of them.
  std::vector<std::filesystem::path> files() const;

  // The bytes of `image` as stored (thread-safe). Throws Error naming it when they cannot be read,
  // and Error(invalid) naming {max_file_bytes} for a file or entry larger than `max_bytes`, from the
  // size its folder or archive states, before anything is allocated (read_limit.h).
  void read(const PredictImage& image, std::vector<std::uint8_t>& out,
            std::uint64_t max_bytes = kDefaultMaxFileBytes) const;

 private:
  const Archive& archive(const std::string& spec, const ArchiveOptions& options);
  void add_file(const std::string& input, const ArchiveOptions& options);
  void add_archive(const std::string& input, const std::string& spec, const std::string& glob,
                   const ArchiveOptions& options);
  void add_entry_or_data(const std::string& input, const std::string& base, const std::string& rest,
                         const ArchiveOptions& options);

  std::map<std::string, std::unique_ptr<Archive>> archives_;  // by the spec opened, each opened once
  std::vector<std::filesystem::path> image_files_;
  std::vector<PredictImage> images_;
  std::vector<PredictInputProblem> problems_;
  std::vector<std::pair<std::string, SkipReport>> skipped_;
};

// A glob on entry names: '*' matches any run of characters but '/', '**' any run at all ("**/"
// also none: test/**/*.jpg matches test/a.jpg), '?' one character but '/', "[a-z]" and "[!a-z]"
// one of (or none of) a set, '\' takes the next character as it is. Unlike extract's glob_match
// (fnmatch, where '*' crosses '/'), test.zip:test/*.jpg leaves test/sub/x.jpg out, as a shell does.
bool entry_glob_match(std::string_view pattern, std::string_view name);

// The file name of `name` (after its last '/') without its last extension: "a/b.c.jpg" -> "b.c",
// ".hidden" -> ".hidden".
std::string image_id(std::string_view name);

}  // namespace frugal
