// The readers behind Archive::open (data_source.h has the design), for data_source.cpp and the
// WebDataset grouping; nothing outside the archive library sees them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/archive/file_type.h"

namespace frugal {

std::unique_ptr<Archive> open_zip_archive(std::unique_ptr<ByteSource> source, std::string display,
                                          const ArchiveOptions& options);

// One tar of a tar archive: a single tar is one shard; a WebDataset set one per file.
struct TarShard {
  std::unique_ptr<ByteSource> source;
  std::string display;     // the file as named, for messages ("shards-000003.tar", "outer.zip:inner.tar")
  std::string prefix;      // put before each member's name ("shards-000003.tar/"); "" for a single tar
  std::uint64_t base = 0;  // where source's offset 0 lies in the concatenation of source->files()
};

// `format`: "tar" or "webdataset". Indexes are cached per shard (data_source.h).
std::unique_ptr<Archive> open_tar_archive(std::vector<TarShard> shards, std::string display, const char* format,
                                          const ArchiveOptions& options);

// For a tar archive: the first entry of each shard (then the entry count) and each shard's prefix
// and display name; nullopt for any other archive.
struct TarShardLayout {
  std::vector<std::size_t> first_entry;
  std::vector<std::string> prefix;
  std::vector<std::string> display;
};
std::optional<TarShardLayout> tar_shard_layout(const Archive& archive);

// Hugging Face parquet files read as one archive (format "parquet", parquet_archive.cpp): an entry
// per row with image bytes, named "<file name>/<row>.<ext>" (the extension from the bytes), labels
// and class names in entry_labels(). Built without Arrow (FRUGAL_PARQUET=OFF): refused saying so.
struct ParquetFile {
  std::unique_ptr<ByteSource> source;
  std::string display;
  std::string name = "";  // what prefixes its entries' names; "" for its file name
};
std::unique_ptr<Archive> open_parquet_archive(std::vector<ParquetFile> files, std::string display,
                                              const ArchiveOptions& options);
// Arrow IPC files (.arrow: a Hugging Face save_to_disk folder's data-*.arrow, a lone stream or
// ARROW1 file) read as parquet is, format "arrow": a record batch where parquet has a row group.
// `dataset_info`: the save_to_disk folder's dataset_info.json ("" when none), whose ClassLabel
// names come before the files' huggingface metadata. Same plugin (plugin/arrow_ipc.cpp).
std::unique_ptr<Archive> open_arrow_archive(std::vector<ParquetFile> files, std::string display,
                                            std::string dataset_info, const ArchiveOptions& options);
// A save_to_disk folder (one split, or a DatasetDict's splits, entries "SPLIT/data-....arrow/ROW.png")
// through open_arrow_archive; nullptr for any other folder (hf_saved.cpp).
std::unique_ptr<Archive> open_hf_saved(const std::filesystem::path& dir, const ArchiveOptions& options);
bool parquet_built();
namespace detail {
// Row groups whose images the parquet reader has read since the process started (opens and
// reads): what tests count to see that an open used the index cache.
std::uint64_t parquet_row_groups_read();
}  // namespace detail

// CIFAR-10/100 as downloaded (cifar_archive.cpp, cifar.h): an entry per image named
// "<train|test>/<batch>/<row>.bmp", a 32x32 BMP made on read, labels and class names in
// entry_labels(). cifar_folder(): `dir` itself when it holds a distribution's files, else its one
// sub-folder that does (two: Error(usage) naming them), else nullopt. is_cifar_tar(): whether a tar
// (compressed as `type` says, or FileType::tar) starts with a CIFAR distribution's folder.
std::optional<std::filesystem::path> cifar_folder(const std::filesystem::path& dir);
std::unique_ptr<Archive> open_cifar_folder(const std::filesystem::path& dir, std::string display,
                                           const ArchiveOptions& options);
bool is_cifar_tar(const ByteSource& src, FileType type);
std::unique_ptr<Archive> open_cifar_tar(std::unique_ptr<ByteSource> src, FileType type, std::string display,
                                        const ArchiveOptions& options);

std::unique_ptr<Archive> open_folder_archive(const std::filesystem::path& root, const ArchiveOptions& options);
// The file behind entry i of a folder archive; nullopt for other archives (or a folder entry).
std::optional<std::filesystem::path> folder_file(const Archive& archive, std::size_t i);

// The entries under `root` (a normalised relative folder name), named relative to it. Throws
// Error(usage) when no entry lies under it, naming the folders there are.
std::unique_ptr<Archive> open_sub_archive(std::unique_ptr<Archive> base, const std::string& root);

// Bytes [offset, offset + size) of an archive's source, as a source of their own that keeps the
// archive alive; files() are the outer ones (a tar inside it is cached under their names).
class WindowSource final : public ByteSource {
 public:
  WindowSource(std::unique_ptr<Archive> outer, std::uint64_t offset, std::uint64_t size);
  std::uint64_t size() const override { return size_; }
  void read_at(std::uint64_t offset, void* buf, std::size_t n) const override;
  std::vector<std::filesystem::path> files() const override { return outer_->source().files(); }
  void check_intact() const override { outer_->source().check_intact(); }
  std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const override;
  // Where offset 0 lies in the concatenation of files().
  std::uint64_t base() const { return base_; }

 private:
  std::unique_ptr<Archive> outer_;
  std::uint64_t offset_, size_, base_;
};

}  // namespace frugal
