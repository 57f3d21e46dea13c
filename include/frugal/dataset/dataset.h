// Datasets read straight from an archive (torch-free: the loaders that turn them into batches of
// tensors are loader/loader.h's).
//
// Layouts: class sub-folders (`[root/]class/file.jpg`, any common root), a `labels.csv`
// (`path,label`) inside the archive, a CSV or TSV named by DatasetOptions::labels (docs/data.md,
// "Labels"), labels from file names or paths by a regex with one capture group, and `.npy` members (one sample per file, or an (N, H, W[, C]) uint8 array with an (N,) integer
// labels array). Images: JPEG, PNG, WebP, GIF, BMP, TIFF (image.h). Junk (`__MACOSX/`, `._*`,
// `.DS_Store`, `Thumbs.db`, hidden files), empty files, non-images and formats frugal does not
// read (HEIC, AVIF, ...) are skipped and counted by reason, never fatal.
//
// Determinism: the sample order is a function of (seed, epoch) and each sample's augmentation of
// (seed, epoch, sample index), so batches do not depend on the number of threads, and starting at
// (epoch, position) replays nothing. With several processes (LoaderOptions::shard), each takes its
// own slice of every global batch of that one order (frugal/dataset/sampler.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "frugal/archive/read_limit.h"
#include "frugal/image/image.h"

namespace frugal {

class Archive;

// Data whose top level is split folders (train/, val/ | valid/ | validation/, test/, any case,
// maybe under one wrapping folder) is read one split at a time, never as classes of those names.
enum class SplitFolder {
  train,       // train/
  validation,  // val/ (or valid/, validation/); test/ when there is none
};

struct DatasetOptions {
  // RE2 syntax, one capture group: searched for in the file name, then, when it finds nothing there,
  // in the path inside the data (inside the split folder on data that has them)
  std::string label_pattern;
  // Labels from a CSV or TSV inside the data or beside it on disk (label_sources.h): --labels FILE,
  // its columns ("ID,LABEL": header names or 0-based indices; "" the first two), the folder inside
  // the data its ids are relative to ("" the CSV's), and a file naming integer classes (a JSON
  // map or list, or a name a line; also for labels.csv, class folders and .npy labels).
  std::string labels, label_columns, images_dir, class_names;
  // Multi-label data (docs/data.md, "Labels"): --label-separator SEP splits each --labels label
  // into a list of tags ("clear primary road" with ' ': runs of spaces split once; tags are trimmed,
  // empty ones dropped; an empty list is an image with no tag). --label-columns ID,* (every column
  // after ID) or ID,A,B,... (more than one label column) reads one 0/1 column per tag instead.
  // Without either, --labels values that look like tag lists are refused (exit 2) unless
  // labels_are_classes says each whole value is one class.
  std::string label_separator;
  bool labels_are_classes = false;
  // Whether the --labels file's first row is a header: "yes", "no" (columns by index only) or
  // "auto" (a header, refused with exit 2 when it looks like data: label_sources.h).
  std::string labels_header = "auto";
  std::uint64_t max_pixels = 89478485;  // larger images count as bad
  // Files (images, .npy files) larger than this are skipped at open and counted, by the size the
  // archive lists, never read (read_limit.h; an array of samples read in place is exempt).
  std::uint64_t max_file_bytes = kDefaultMaxFileBytes;
  ExifOrientation exif_orientation = ExifOrientation::apply;  // photos turned upright as their EXIF says
  double max_bad_fraction = 0.01;                             // of the images seen by a loader
  int channels = 0;                                           // 0: as the data; 1 or 3
  std::string name_encoding;                                  // for non-UTF-8 entry names (ArchiveOptions)
  std::string root;                                           // a folder inside the data: only it is read ({data_root})
  bool cache_decompressed = false;                            // a compressed tar decompressed once (ArchiveOptions)
  std::string label_kind;  // CIFAR-100: "fine" ("" the same) or "coarse" labels (ArchiveOptions; {label_kind})
  SplitFolder split = SplitFolder::train;  // which split folder, on data that has them
  std::optional<std::uint64_t> decompressed_max_bytes;
  // --exclude: files never read, each a path inside the data or a glob (entry_glob_match: '*' stays
  // within a folder, '**' crosses folders); one without '/' matches a file's name in any folder.
  // Matched against the path from the data's top (train/cat/x.jpg) and from the folder read (cat/x.jpg).
  std::vector<std::string> exclude;
};

// Counts by reason of what open() left out ("junk", "not an image", "empty file", "unsupported
// format (HEIC)", "no label (...)", "hidden", ...), plus the undecodable images the loaders have
// met so far.
struct SkipReport {
  std::map<std::string, std::uint64_t> counts;
  std::map<std::string, std::string> examples;  // one entry name per reason
  // Classes the layout names (a folder, a labels.csv row, the label pattern's group) whose every
  // file was skipped, so that they are no class of the dataset: name -> what their files were,
  // "4 unsupported format (HEIC) (e.g. b/IMG_1.heic)".
  std::map<std::string, std::string> empty_classes;
  std::uint64_t total() const;
  std::string summary() const;  // "3 junk (e.g. __MACOSX/a/._x.jpg), 1 not an image (...)"
};

// The unit of I/O each sample is read in (a parquet row group: decoding one serves every row of
// it) and the bytes each unit decodes to: what the epoch order keeps together (sampler.h). Empty
// for data read a file at a time.
struct IoGroups {
  std::vector<std::uint32_t> group;  // per sample of the dataset (or subset)
  std::vector<std::uint64_t> bytes;  // per group
  bool empty() const { return group.empty(); }
};

// A folder of parquet files named by split, as a Hugging Face dataset's data/ folder holds them
// (train-00000-of-00001.parquet, validation-*, test-*): each split's file names, ", "-separated
// ("" when absent), and the glob that reads it (DIR/train-*.parquet; "" when absent).
//
// A folder of .arrow files named so, and a DatasetDict.save_to_disk folder (dataset_dict.json; the
// split's folder then reads it, its files listed as "test/data-00000-of-00001.arrow") likewise.
struct SplitFiles {
  std::string train, validation, test;
  std::string glob[3];                                // train, validation, test
  std::string what = "parquet files named by split";  // for the line that says which is which
  std::string test_data;                              // DATA:SPLIT that reads the test split alone, or ""
};

struct DatasetShared;  // archive, entries and labels; shared by subsets

class Dataset {
 public:
  static std::shared_ptr<Dataset> open(const std::filesystem::path& archive, const DatasetOptions& = {});

  const std::vector<std::string>& classes() const;  // sorted, stable; the tag names on multi-label data
  std::size_t size() const;
  int label(std::size_t i) const;  // into classes(); -1 on multi-label data
  // Multi-label data (DatasetOptions::label_separator, 0/1 columns): each sample has a set of tags.
  bool multi_label() const;
  // Sample i's tags: sorted indices into classes(), maybe none (an image with no tag is a negative
  // sample). Empty on single-label data.
  const std::vector<std::uint32_t>& tags(std::size_t i) const;
  const std::string& name(std::size_t i) const;  // entry name ("x.npy[17]" for array samples)
  int channels() const;                          // 1 or 3 (after DatasetOptions::channels)
  int native_size() const;                       // typical image side (median of a sample)
  int largest_sampled_size() const;              // the largest shorter side of that sample (up to 32 images)
  const DatasetOptions& options() const;
  const std::filesystem::path& path() const;
  // On data whose top level is split folders: the folder read ("train/", "data/val/"), and the
  // validation folder beside it ("" when there is none). Both "" on other data.
  const std::string& split_folder() const;
  const std::string& validation_folder() const;
  // On a folder of parquet files named by split: which files each split is (split_folder() and
  // validation_folder() are then "": the rows are named by their file, as in the whole folder).
  const std::optional<SplitFiles>& split_files() const;
  // What was decided by the files' bytes, their names saying nothing (no extension, or one of no
  // known kind): "12 files whose name does not say image (e.g. a/0001) are images by their bytes";
  // "" when none (docs/data.md, "Which files are images").
  const std::string& taken_by_bytes() const;
  // The reader that opened the data (Archive::format(): "zip", "folder", "tar", "webdataset",
  // "parquet", "arrow", "cifar"), and where the labels came from: label_source() one of
  // "class_folders", "labels_csv" (a labels.csv found in the data), "labels" ({labels}),
  // "label_pattern", "reader" (the reader's own: a parquet column, WebDataset members, CIFAR's
  // batches), "arrays" (.npy labels arrays); labels_read() says it in words, the rule it followed
  // included ("class folders: the folders right below the top of the data").
  const char* reader() const;
  const std::string& label_source() const;
  const std::string& labels_read() const;

  std::shared_ptr<Dataset> subset(std::vector<std::size_t> indices) const;
  // {train, val}: a sample is in val when a hash of its entry name falls below `fraction`, so the
  // split is the same on every run and adding files does not move the others.
  std::pair<std::shared_ptr<Dataset>, std::shared_ptr<Dataset>> split_val(double fraction) const;

  SkipReport skipped() const;
  // The entries found undecodable so far (by the loaders of every subset of this data), sorted,
  // the first kMaxBadNames of them: what a message names for --exclude.
  static constexpr std::size_t kMaxBadNames = 1000;
  std::vector<std::string> bad_files() const;
  IoGroups io_groups() const;

  // Decodes + transforms sample i into `out` (image_size x image_size x channels()).
  // Throws Error(invalid) naming the entry when it cannot be decoded.
  void load(std::size_t i, const TransformOptions& transform, std::uint64_t seed, Image& scratch, Image& out) const;
  // Sample i's file as the archive holds it (JPEG, PNG or .npy bytes, not decoded), checked
  // against its CRC-32 as load() checks it: a view into the mapped archive when stored, else
  // inflated into `buffer`. nullopt for a sample inside an (N, ...) array member. Throws
  // Error(invalid) naming the entry when the bytes are damaged.
  std::optional<std::span<const std::uint8_t>> file_bytes(std::size_t i, std::vector<std::uint8_t>& buffer) const;
  // Counts an undecodable sample (thread-safe); shared by every subset of one archive.
  void record_bad(std::size_t i, const std::string& why) const;

  Dataset(std::shared_ptr<DatasetShared> shared, std::vector<std::size_t> indices);

 private:
  std::shared_ptr<DatasetShared> shared_;
  std::vector<std::size_t> indices_;  // into shared_->samples
};

}  // namespace frugal
