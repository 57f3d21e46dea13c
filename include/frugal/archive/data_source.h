// DATA as users download it, read in place: one Archive interface (archive.h) over every reader.
//
// Design. `Archive` was a zip index; it is now the interface every reader implements: a list of
// entries (ZipEntry: name, size, method, CRC when there is one) and positioned, thread-safe reads
// (read, read_to, stored_view). Dataset, ls, verify and extract read any of these unchanged:
//
//   reader     entries                                   reads                      checksum
//   zip        central directory (zip_index.h)           mapped, inflated          CRC-32
//   tar        headers, indexed once (tar_index.h)       mapped, in place          none
//   folder     the files under it, sorted (no link out)  pread of each file        none
//   shards     the tars of a WebDataset set, in order    mapped, in place          none
//   parquet    a row with image bytes each (Arrow)       a cached row group        none
//   arrow      as parquet (Arrow IPC, save_to_disk)      a cached record batch     none
//   SUB/       the entries under SUB, names relative     the archive below         as below
//   INNER      a stored zip or tar inside another        a window of the outer one as INNER
//
// Members of a tar and files of a folder are "stored" (method 0, compressed_size == size) with
// has_crc32 false: `ls` shows no CRC for them, `verify` reads each whole and checks what exists
// (structure, sizes inside the file) and counts them as entries without checksum; extract compares
// a file already there by its bytes. Links, devices, FIFOs and sparse files are listed with
// entry_problem() and never read.
//
// What Archive::open(PATH) does, in order:
//   1. PATH names a folder: the folder reader, or the parquet reader when its top level holds
//      parquet files and no sub-folder, or the arrow reader for a save_to_disk folder (state.json,
//      data-*.arrow; a DatasetDict's dataset_dict.json: every split, entries under its folder) or
//      a folder of .arrow files only. A pattern ("shards-{000000..000099}.tar", a glob
//      "shards-*.tar", several joined by "::"): the WebDataset shard reader (webdataset.h), or the
//      parquet reader when the first file it names is parquet.
//   2. PATH names a file: split sets are found as before (part_set.h), then the bytes decide
//      (file_type.h): a tar (ustar magic or a valid header) is indexed, parquet is read by the
//      parquet reader, an Arrow IPC stream or file by the arrow reader, anything else goes to the zip parser; compressed tars, 7z, rar, images are
//      refused naming what they are and what to do (a compressed tar: decompress.h,
//      --cache-decompressed).
//
// Parquet (Hugging Face datasets' files; src/archive/parquet_archive.cpp, Arrow in a plugin loaded
// on the first parquet file, src/archive/parquet_plugin.h; without it, refused saying so): the image column ({bytes, path} structs) and the
// label column are chosen from the schema, the labels and class names (the `huggingface` schema
// metadata) reach the dataset through Archive::entry_labels(). The first open reads every row
// group's image bytes (each row's size, null rows, format from the bytes: the whole file, seconds
// for gigabytes); a file of at least kParquetIndexCacheMin rows then has them cached as a tar's
// index is (below; "parquet-index" in the cache folder, docs/formats.md "Parquet index cache"),
// checked also by hashes of the file's footer and of 64 blocks spread over it. Reads decode a row
// group at a time into a bounded cache, and the epoch order keeps a window of row groups together
// (sampler.h) so that each decode serves all its rows.
//   3. PATH does not exist but a prefix before a ':' does: "DATA:REST". REST is resolved against
//      the opened archive, level by level: an entry that is a file is opened as an archive inside
//      it (read in place when stored; a deflated one is refused with the command that extracts
//      it), a folder becomes a sub-folder view; "a.zip:inner.zip:train/" chains both. A folder's
//      display name is "DATA:SUB", so a message about one of its files reads "DATA:SUB:file".
//      On a DatasetDict folder, REST's first part naming a split opens that split's folder alone.
//   4. ArchiveOptions::root, when set, is one more sub-folder view ({data_root}).
//
// The tar index cache (docs/formats.md, "Tar index cache"): a tar of at least kTarIndexCacheMin
// members costs one read of every header on its first open (its headers lie all over the file: on
// a cold disk, a page fault each). The index is then written, crash-safely, to a file in the
// cache folder (ArchiveOptions::index_cache_dir, else default_index_cache_dir(); never beside the
// data, which is often read-only, as Kaggle's /kaggle/input is), named by a hash of the tar's
// path and range. It is used again only when the current user owns the file, its HMAC-SHA256
// under the user's key is right (src/archive/cache_key.h: nobody else who can write the folder
// can plant an index that renames classes), and it was made from the same bytes as far as the
// file system tells: every file's size, mtime (ns), device and inode, the range read, and the
// header checksums of up to 64 members spread over the tar, read again. `verify` never uses it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace frugal {

// Tars with fewer members are parsed on every open (microseconds) and never cached.
inline constexpr std::size_t kTarIndexCacheMin = 1000;
// Parquet files with fewer rows read their images on every open and are never cached.
inline constexpr std::size_t kParquetIndexCacheMin = 1000;

// $FRUGAL_CACHE_DIR, else $XDG_CACHE_HOME/frugal, else $HOME/.cache/frugal; tar indexes go in its
// "tar-index" folder, parquet rows in "parquet-index". Empty when none of them is set.
std::filesystem::path default_index_cache_dir();

// DATA split where the file system ends: `base` is the longest prefix before a ':' that exists
// (the whole text when it exists itself, when it holds "::" (shard patterns joined), or when no
// prefix does), `rest` what follows, resolved against the archive by Archive::open ("" when none).
struct DataSpec {
  std::filesystem::path base;
  std::string rest;
};
DataSpec parse_data_spec(const std::string& text);

// The file {cache_decompressed} reads DATA from when DATA's file (parse_data_spec's base) is a
// compressed tar: decompress.h's tar in `dir` (empty: the cache folder's "decompressed/"), made or
// not; nullopt for any other data, or when there is no cache folder. A disk budget counts it.
std::optional<std::filesystem::path> decompressed_cache_file(const std::string& data,
                                                             const std::filesystem::path& dir = {});

// Whether `text` is a shard pattern rather than one file: it holds a brace group ("{0..9}",
// "{a,b}"), glob characters (* ? [) or "::", and does not itself name an existing file.
bool is_shard_pattern(const std::string& text);

// Hugging Face datasets' save_to_disk folders (hf_saved.cpp), read by the arrow reader: the data
// files of a Dataset.save_to_disk folder (state.json's "_data_files", names relative to it; empty
// for any other folder), and a DatasetDict.save_to_disk folder's splits (dataset_dict.json's, each
// such a folder beside it; nullopt for any other path). Exit 3 naming the JSON file when it is
// damaged or names files that are not there. DATA:SPLIT reads one split of a DatasetDict.
std::vector<std::string> hf_saved_files(const std::filesystem::path& dir);
std::optional<std::vector<std::string>> hf_dataset_dict_splits(const std::filesystem::path& dir);

}  // namespace frugal
