// Reading archives for training: a zip file, or a split set read in place (a frugal manifest or
// first part, plain `split` parts NAME_aa/NAME.000, a `zip -s` set .z01…/.zip). Nothing is joined
// or extracted to read it.
//
// The central directory is parsed once into a compact index; entries are then read by many
// threads at once with positioned reads (no shared file offset, no lock on the read path).
//
// An Archive is also a folder, a tar, a WebDataset shard set, a sub-folder of any of them and an
// archive stored inside another: data_source.h says how Archive::open tells them apart and what
// each reader promises. Everything above (Dataset, ls, verify, extract) reads them unchanged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace frugal {

struct ArchiveOptions {
  // Encoding of entry names that lack the UTF-8 flag and are not valid UTF-8 (e.g. "cp437", "gbk").
  // Empty: such names are shown with U+FFFD for the invalid bytes and raw bytes kept.
  std::string name_encoding;
  // A folder inside the data ("train" or "train/"): only the entries under it are seen, named
  // relative to it ({data_root}; DATA:train/ says the same). Empty: all of it.
  std::string root;
  // Where tar indexes and parquet rows are cached (data_source.h): nullopt: default_index_cache_dir();
  // an empty path: never cached (each open reads every header, every parquet image).
  std::optional<std::filesystem::path> index_cache_dir;
  // A compressed tar (.tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2) is refused naming
  // {cache_decompressed} unless this is set; then it is decompressed once (decompress.h) into
  // `decompressed_dir` (empty: the cache folder's "decompressed/"), at most
  // `decompressed_max_bytes` of it, and read as that tar.
  bool cache_decompressed = false;
  std::filesystem::path decompressed_dir;
  std::optional<std::uint64_t> decompressed_max_bytes;
  // CIFAR-100's labels to read: "fine" (the 100 classes; "" says the same) or "coarse" (the 20
  // superclasses) ({label_kind}); CIFAR-10 has fine labels only.
  std::string label_kind;
};

enum class ZipMethod : std::uint16_t { stored = 0, deflate = 8 };

// Members that are neither a file, a folder nor a symbolic link (tar members, folder entries): listed,
// named by entry_problem(), never read.
enum class SpecialMember : std::uint8_t { none, hard_link, device, fifo, sparse, other };

// Where a folder's symbolic link that was not followed leads (a link to a file or folder inside the
// folder is followed: its target's file, or its files, under the link's name). Links in a zip or a
// tar are not resolved: `unknown`.
enum class LinkTarget : std::uint8_t { unknown, dangling, file_outside, folder_outside, folder_cycle };

struct ZipEntry {
  std::string name;          // UTF-8 (decoded per ArchiveOptions)
  std::string raw_name;      // the bytes as stored in the archive (a tar's leading "./" left out)
  bool name_is_utf8 = true;  // false when `name` had to be repaired or decoded
  // False for tar members and a folder's files: no checksum was stored, so nothing can tell damaged
  // bytes from good ones (crc32 is 0). verify and extract check what there is (sizes, structure).
  bool has_crc32 = true;
  SpecialMember special = SpecialMember::none;
  std::uint64_t size = 0;  // uncompressed
  std::uint64_t compressed_size = 0;
  std::uint64_t local_header_offset = 0;  // in the virtual (joined) file; a tar member's first header
  std::uint32_t crc32 = 0;
  std::uint16_t method = 0;  // raw zip method number; 0 stored, 8 deflate
  std::uint16_t flags = 0;
  bool is_dir = false;
  bool is_symlink = false;
  LinkTarget link_target = LinkTarget::unknown;  // with is_symlink, on a folder
  bool encrypted = false;
  // An earlier entry names the same path: the same name, or one that normalises to it ("d/f",
  // "d/./f", "d//f"; normalize_relative()). find() looks names up as written and returns the first.
  bool duplicate_name = false;
  std::uint32_t duplicate_of = 0;  // with duplicate_name: the index of the entry it collides with
};

// Why entry e must not be extracted, or "" when it may be: an unsafe name (empty, "..", absolute,
// backslash, drive letter, NUL byte), a symlink, a special member (hard link, device, FIFO, sparse
// file), a duplicate name, encryption, or a method other than stored/deflate. Listing and verifying
// still show such entries; extraction refuses them.
std::string entry_problem(const ZipEntry& e);

// What a reader that holds its labels beside the images (a parquet label column, WebDataset label
// members) says of them, for
// the dataset to use instead of the layout's rules (Archive::entry_labels()).
struct EntryLabels {
  std::string column;                              // where they come from, for messages ("label")
  std::vector<std::optional<std::int64_t>> label;  // per entry; nullopt: none (null, or negative as HF's -1)
  std::vector<std::string> class_names;            // integer label -> name (the file's metadata); may be empty
  // Per entry (or empty): a label given as text (a WebDataset .txt member, a JSON string) where
  // `label` has no number; the text is the class name.
  std::vector<std::string> text;
  // Per entry (or empty): true for a member the reader accounts for itself (a WebDataset sample's
  // .cls, .txt or .json beside its image, or a member counted in `skipped`): never a sample, never
  // counted again by the layout.
  std::vector<bool> sample_member;
  // Why an entry without a label has none, when `column` does not say it ("" for the column's words).
  std::string no_label;
  // Rows that are no entry, by reason ("no image bytes (null)", "empty image bytes"), one example each.
  std::map<std::string, std::uint64_t> skipped;
  std::map<std::string, std::string> examples;
  // Per entry, the unit of I/O it is read in (a parquet row group, numbered over the whole set), and
  // the bytes each unit decodes to: what a locality-aware epoch order keeps together (sampler.h).
  std::vector<std::uint32_t> io_group;
  std::vector<std::uint64_t> io_group_bytes;
};

class Archive;
// entry_problem() of entry i, naming the entry a duplicate collides with.
std::string entry_problem(const Archive& archive, std::size_t i);
// Throws Error(invalid) naming both entries when two entries name the same path: training and
// extraction could not tell which one is meant.
void refuse_duplicate_names(const Archive& archive);

std::string method_name(std::uint16_t method);  // "stored", "deflate", "bzip2", ... or "method-N"

// A random-access byte source: one file, or parts read as one virtual file. Thread-safe reads.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads exactly n bytes at offset; throws Error(invalid) past the end.
  virtual void read_at(std::uint64_t offset, void* buf, std::size_t n) const = 0;
  // The files it reads, in order (one for a plain file).
  virtual std::vector<std::filesystem::path> files() const = 0;
  // Size of each file in files(), in order; a `zip -s` set counts offsets per part ("disk").
  virtual std::vector<std::uint64_t> part_sizes() const { return {size()}; }
  // Throws Error(invalid) when a file shrank while mapped (bytes read since then may be zeros):
  // read_at checks it itself; a reader of view() bytes calls it once done with them.
  virtual void check_intact() const {}
  // A zero-copy view of [offset, offset+n) when it lies in one memory-mapped piece, else empty.
  virtual std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const {
    (void)offset;
    (void)n;
    return std::nullopt;
  }
};

// Opens FILE, a manifest or a first part, detecting split sets as described above.
std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& path);

// Bytes held in memory, named `name` in messages (tests and the fuzz target).
std::unique_ptr<ByteSource> memory_byte_source(std::string data, std::string name = "<memory>");

class Archive {
 public:
  // DATA as data_source.h describes it: a zip, a split set, a tar, a folder, a WebDataset shard
  // pattern, DATA:SUB/ (a sub-folder) and DATA:INNER.zip (an archive stored inside another).
  // Throws Error(invalid) for a corrupt or unsafe archive, naming the file and what was wrong;
  // Error(usage) for a path that names nothing frugal reads, saying what it is.
  static std::unique_ptr<Archive> open(const std::filesystem::path& path, const ArchiveOptions& options = {});
  // The zip or tar in `source` (told apart by their bytes); other bytes: Error(invalid) naming
  // what they look like (file_type.h).
  static std::unique_ptr<Archive> open(std::unique_ptr<ByteSource> source, std::string display_name,
                                       const ArchiveOptions& options = {});
  virtual ~Archive() = default;

  // "zip", "tar", "webdataset" (tar shards), "folder", "parquet": what was opened, for messages.
  virtual const char* format() const = 0;

  virtual const std::vector<ZipEntry>& entries() const = 0;
  virtual std::optional<std::size_t> find(std::string_view name) const = 0;
  virtual const std::string& display_name() const = 0;  // the path the user gave
  virtual const ByteSource& source() const = 0;

  // Reads entry i whole: inflates, checks size and CRC-32. Thread-safe. Throws Error(invalid)
  // naming archive and entry on any mismatch; the inflated size is capped at the declared size.
  virtual void read(std::size_t i, std::vector<std::uint8_t>& out) const = 0;
  std::vector<std::uint8_t> read(std::size_t i) const {
    std::vector<std::uint8_t> out;
    read(i, out);
    return out;
  }
  // Reads entry i in pieces, in order, for entries too large to hold: pieces of at most 4 MiB,
  // stored or inflated (memory stays a few MiB whatever the entry declares). Checks size and CRC-32
  // after the last piece and throws as read() does, so a consumer must not trust the bytes until it
  // returns; a sink may throw to stop early.
  virtual void read_to(std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) const {
    std::vector<std::uint8_t> out;
    read(i, out);
    sink(out);
  }
  // For a stored entry lying in one mapped piece: its bytes without a copy (CRC not checked).
  virtual std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const = 0;
  // Where entry i's bytes lie, as they are, in source() (a stored zip entry, a tar member), else
  // nullopt: what an archive stored inside this one is read through, in place.
  virtual std::optional<std::uint64_t> stored_offset(std::size_t i) const {
    (void)i;
    return std::nullopt;
  }
  // The labels a reader read with its entries (parquet; a WebDataset shard set, or a tar holding
  // .cls members), else nullptr: the layout decides.
  virtual const EntryLabels* entry_labels() const { return nullptr; }
};

}  // namespace frugal

namespace frugal {

// ---- verify (`frugal verify`) ----
struct VerifyProblem {
  std::string name;  // entry name, part file, or the archive itself
  std::string problem;
};

struct VerifyReport {
  std::vector<VerifyProblem> bad;  // every bad item, in archive order
  std::uint64_t parts_checked = 0;
  std::uint64_t entries_checked = 0;
  std::uint64_t bytes_checked = 0;  // uncompressed bytes whose CRC-32 was checked
  // Entries read whole but with no checksum to hold them to (tar members, a folder's files): only
  // their structure and size could be checked.
  std::uint64_t entries_without_checksum = 0;
  bool is_zip = false;
  bool ok() const { return bad.empty(); }
};

// A manifest: each part's size and SHA-256, then, when the file is a zip, its entries. Anything
// else that Archive::open reads: its entries and entry_problem(); a zip's CRC-32, sizes and local
// headers; a tar's headers and that every member lies inside the file; a folder's files read whole
// (no checksum: counted in entries_without_checksum). Structural damage that
// stops the archive from opening is reported as one bad item named after the archive. threads = 0:
// one per core. Shows progress on stderr.
VerifyReport verify_archive(const std::filesystem::path& path, const ArchiveOptions& options = {},
                            unsigned threads = 0);
void verify_entries(const Archive& archive, VerifyReport& report, unsigned threads = 0);
// The report as `verify --json` prints it (docs/cli.md), one compact JSON document: every front
// end's verify result spelled once.
std::string verify_report_json(const VerifyReport& report);

// ---- extract (`frugal extract`) ----
// What to do with a file that is already where an entry goes (and is not that entry already).
enum class ExistingFiles {
  refuse,     // refuse the whole extraction, naming them (Error usage), before writing anything
  overwrite,  // replace them (never the archive being read or one of its parts, never a folder)
  skip,       // keep them and extract the rest
};

struct ExtractOptions {
  std::vector<std::string> patterns;         // fnmatch globs on entry names; empty: all
  std::filesystem::path dir = ".";           // everything is written inside it
  std::optional<std::uint64_t> limit;        // at most this many files
  std::optional<std::uint64_t> max_bytes;    // refuse when the selected files declare more
  std::optional<std::uint64_t> disk_budget;  // refuse when they would not fit in this much disk
  ExistingFiles existing = ExistingFiles::refuse;
};

struct ExtractResult {
  std::uint64_t files = 0;  // written
  std::uint64_t dirs = 0;
  std::uint64_t bytes = 0;
  std::uint64_t already_there = 0;        // a regular file with the entry's size and CRC-32 was there
  std::uint64_t kept = 0;                 // another file was there and was kept (ExistingFiles::skip)
  std::uint64_t replaced = 0;             // another file was there and was replaced (ExistingFiles::overwrite)
  std::uint64_t temporaries_removed = 0;  // abandoned *.frugal-tmp-* of an interrupted run
};

// Every check that can be made before writing is made first: unsafe entries (entry_problem())
// and names longer than the file system takes (a part over NAME_MAX, a path over PATH_MAX) refuse
// the whole extraction (Error invalid); files already there decide as ExistingFiles says; sizes
// over --max-bytes, --disk-budget or the free space refuse it (Error budget). Then each file is
// written unnamed (O_TMPFILE: a killed extract leaves nothing behind; a named temporary where the
// file system cannot) and published when its batch is synced, never replacing a file that
// appeared meanwhile unless `overwrite`. A corrupt entry stops extraction with the files before
// it in place, and a rerun completes it (the files written count as already there). The target
// folder is locked while extracting: a second extract into it fails at once (Error io).
ExtractResult extract(const Archive& archive, const ExtractOptions& options);

// fnmatch(3)-style: '*' and '?' also match '/', as unzip's patterns do; [...] classes.
bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace frugal
