// Writes one byte stream as split parts "<dir>/<name>.partNNNN" of at most part_size bytes each,
// hashing every part and the whole stream as the bytes go by, so that nothing is read twice.
// Each part is written under an owned temporary name (Env::new_writable_file) and renamed when
// complete, every write going through the Env given; finish() writes the
// manifest last, so a manifest on disk always describes a complete set. A writer destroyed
// before finish() removes what it wrote.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "archive/byte_sink.h"
#include "archive/manifest.h"
#include "archive/sha256_worker.h"
#include "frugal/util/env.h"
#include "frugal/util/fs.h"

namespace frugal {

class PartWriter : public ByteSink {
 public:
  // `digits`: the least number of digits in part numbers; more are used when the parts outnumber
  // them (the parts are then renamed in finish()).
  PartWriter(std::filesystem::path dir, std::string name, std::uint64_t part_size, int digits = 4, bool sync = true,
             Env& env = Env::real());
  ~PartWriter() override;
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;

  void write(const void* data, std::size_t n) override;
  std::uint64_t offset() const override { return total_; }

  // Zero-copy path for readers: fill (a prefix of) space(), then commit() how much was filled.
  std::span<char> space();
  void commit(std::size_t n);

  // Closes the last part and writes `manifest_path` (in the parts' folder). Returns the manifest.
  SplitManifest finish(const std::filesystem::path& manifest_path);

  static std::string part_name(const std::string& name, std::size_t index, int digits);

  // Throws Error(unsupported) (exit 3) before anything is written when the names of a set of
  // `parts` parts of `name` ("NAME.partNNNN", "NAME.manifest.json") would not fit the file
  // system's NAME_MAX in `dir` (or in the nearest folder above it that exists).
  static void check_names_fit(const std::filesystem::path& dir, const std::string& name, std::uint64_t parts);
  // Removes the abandoned temporaries (leftovers.h) that an interrupted writer of the set `name`
  // left in `dir`: those of its parts and of its manifest. Returns how many.
  static std::size_t remove_abandoned(const std::filesystem::path& dir, const std::string& name);

 private:
  void flush();
  void write_to_parts(const char* p, std::size_t n);
  void open_part();
  void close_part();

  Env& env_;
  std::filesystem::path dir_;
  std::string name_;
  std::uint64_t part_size_;
  int digits_;
  bool sync_;
  std::vector<char> buf_[2];
  int cur_ = 0;
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
  Sha256Worker whole_;
  std::unique_ptr<Sha256> part_sha_;
  std::unique_ptr<WritableFile> part_;  // the open part; holds its temporary's owner lock
  std::filesystem::path temp_;
  std::uint64_t part_written_ = 0;
  SplitManifest manifest_;
  bool finished_ = false;
};

}  // namespace frugal
