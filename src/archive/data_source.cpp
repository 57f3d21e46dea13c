// Archive::open: from what the user named to the reader that reads it (data_source.h, "What
// Archive::open(PATH) does").
#include "frugal/archive/data_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "archive/readers.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/decompress.h"
#include "frugal/util/error.h"
#include "frugal/archive/file_type.h"
#include "frugal/util/fs.h"
#include "frugal/archive/webdataset.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::lstat(p.c_str(), &st) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

FileTypeInfo sniff(const ByteSource& src, std::size_t bytes = kSniffBytes) {
  std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(src.size(), bytes)));
  if (!head.empty()) src.read_at(0, head.data(), head.size());
  const FileTypeInfo info = sniff_file_type(head);
  if (info.type == FileType::bzip2 && info.inner == FileType::unknown && bytes < kSniffBzip2Bytes && src.size() > bytes)
    return sniff(src, kSniffBzip2Bytes);
  return info;
}

// Whether a zip's end record could be there: its signature in the last 64 KiB + 22 bytes (where
// the zip parser looks). Text or an image before it is then a self-extractor's stub.
bool has_end_record_signature(const ByteSource& src) {
  const std::uint64_t n = std::min<std::uint64_t>(src.size(), 22 + 65535);
  std::string tail(static_cast<std::size_t>(n), '\0');
  if (n) src.read_at(src.size() - n, tail.data(), tail.size());
  return tail.find("PK\x05\x06") != std::string::npos;
}

std::unique_ptr<Archive> open_bytes(std::unique_ptr<ByteSource> src, std::string display,
                                    const ArchiveOptions& options) {
  const FileTypeInfo type = sniff(*src);
  if (type.type == FileType::parquet) {
    std::vector<ParquetFile> files;
    files.push_back({std::move(src), display});
    return open_parquet_archive(std::move(files), std::move(display), options);
  }
  if (type.type == FileType::arrow) {  // a Hugging Face .arrow file (IPC stream) or an ARROW1 file
    std::vector<ParquetFile> files;
    files.push_back({std::move(src), display});
    return open_arrow_archive(std::move(files), std::move(display), "", options);
  }
  if (type.type == FileType::tar) {
    std::uint64_t base = 0;
    if (auto* w = dynamic_cast<const WindowSource*>(src.get())) base = w->base();
    std::vector<TarShard> shards;
    shards.push_back({std::move(src), display, "", base});
    return open_tar_archive(std::move(shards), std::move(display), "tar", options);
  }
  const bool named = type.type == FileType::text || (type.type >= FileType::jpeg && type.type <= FileType::tiff);
  if (type.type != FileType::zip && type.type != FileType::unknown && type.type != FileType::empty &&
      (!named || !has_end_record_signature(*src)))
    throw Error(named ? ErrorKind::invalid : ErrorKind::unsupported, not_an_archive_message(display, type));
  return open_zip_archive(std::move(src), std::move(display), options);
}

// A pattern or folder of parquet files (data/train-*.parquet), each of them parquet; of Arrow
// files (data/train-*.arrow) with `arrow`.
std::unique_ptr<Archive> open_parquet_set(const std::vector<std::string>& names, const std::string& display,
                                          const ArchiveOptions& options, bool arrow = false) {
  std::vector<ParquetFile> files;
  for (const std::string& file : names) {
    auto src = open_byte_source(file);
    const FileTypeInfo type = sniff(*src);
    if (type.type != (arrow ? FileType::arrow : FileType::parquet))
      fail(ErrorKind::invalid, file, std::string(arrow ? "an Arrow file" : "a parquet file") + " of the set " + display,
           describe(type),
           std::string("give only the ") + (arrow ? "Arrow" : "parquet") + " files of one split (e.g. 'data/train-*" +
               (arrow ? ".arrow" : ".parquet") + "')");
    files.push_back({std::move(src), file});
  }
  if (arrow) return open_arrow_archive(std::move(files), display, "", options);
  return open_parquet_archive(std::move(files), display, options);
}

// The parquet files (or `ext` ones) at the top of a folder that holds nothing else to read (no
// sub-folder but hidden ones): a Hugging Face dataset's data/ folder. Empty for any other folder.
std::vector<std::string> parquet_files_of(const std::string& dir, const char* ext = ".parquet") {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (e.is_directory(ec)) return {};
    if (e.path().extension() == ext && e.is_regular_file(ec)) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::unique_ptr<Archive> open_shards(const std::string& pattern, const ArchiveOptions& options) {
  std::vector<TarShard> shards;
  std::vector<std::string> names;
  const std::vector<std::string> expanded = expand_shard_pattern(pattern);
  if (!expanded.empty() && sniff(*open_byte_source(expanded.front())).type == FileType::parquet)
    return open_parquet_set(expanded, pattern, options);
  if (!expanded.empty() && sniff(*open_byte_source(expanded.front())).type == FileType::arrow)
    return open_parquet_set(expanded, pattern, options, true);
  for (const std::string& file : expanded) {
    auto src = open_byte_source(file);
    const FileTypeInfo type = sniff(*src);
    if (type.type != FileType::tar) {
      std::string m = not_an_archive_message(file, type);
      fail(ErrorKind::unsupported, file, "a tar shard of the WebDataset set " + pattern, describe(type),
           m.empty() ? "every file the pattern names must be a tar" : m.substr(m.find("; ") + 2));
    }
    std::string name = fs::path(file).filename().string();
    for (const auto& n : names)
      if (n == name)
        fail(ErrorKind::usage, pattern, "shards with distinct file names", "two named " + name,
             "give each shard once (a shard's name prefixes its members' names)");
    names.push_back(name);
    shards.push_back({std::move(src), file, name + "/", 0});
  }
  return open_tar_archive(std::move(shards), pattern, "webdataset", options);
}

// With {cache_decompressed}, a compressed tar is decompressed once (reused while it is unchanged)
// and read as that tar, named as the file the user gave.
std::unique_ptr<Archive> open_decompressed(const std::string& path, const ArchiveOptions& options) {
  fs::path dir = options.decompressed_dir;
  if (dir.empty()) {
    const fs::path cache = default_index_cache_dir();
    if (cache.empty())
      fail(ErrorKind::usage, path, "a cache folder to decompress into", "none ($HOME is not set)",
           "set FRUGAL_CACHE_DIR to a folder with room for the decompressed tar");
    dir = cache / "decompressed";
  }
  const DecompressedTar t = decompress_tar(path, dir, options.decompressed_max_bytes);
  return open_bytes(open_byte_source(t.tar.string()), path, options);
}

std::unique_ptr<Archive> open_base(const std::string& path, const ArchiveOptions& options) {
  if (is_dir(path)) {
    if (auto dir = cifar_folder(path)) return open_cifar_folder(*dir, path, options);
    if (auto files = parquet_files_of(path); !files.empty()) return open_parquet_set(files, path, options);
    if (auto saved = open_hf_saved(path, options)) return saved;  // save_to_disk: state.json, data-*.arrow
    if (auto files = parquet_files_of(path, ".arrow"); !files.empty())
      return open_parquet_set(files, path, options, true);
    return open_folder_archive(path, options);
  }
  if (!exists(path) && is_shard_pattern(path)) return open_shards(path, options);
  auto src = open_byte_source(path);
  // CIFAR's .tar.gz is read in memory (cifar_archive.cpp says why), {cache_decompressed} or not.
  if (const FileTypeInfo t = sniff(*src);
      (is_compressed_tar(t) || t.type == FileType::tar) && is_cifar_tar(*src, t.type))
    return open_cifar_tar(std::move(src), t.type, path, options);
  if (options.cache_decompressed && is_compressed_tar(sniff(*src))) return open_decompressed(path, options);
  return open_bytes(std::move(src), path, options);
}

// An archive stored inside `outer`, read through a window of its bytes.
std::unique_ptr<Archive> open_nested(std::unique_ptr<Archive> outer, std::size_t i, const ArchiveOptions& options) {
  const ZipEntry& e = outer->entries()[i];
  const std::string display = outer->display_name() + ":" + e.name;
  if (auto file = folder_file(*outer, i)) return open_bytes(open_byte_source(*file), display, options);
  if (!e.is_symlink && e.special == SpecialMember::none)
    if (auto at = outer->stored_offset(i)) {
      const std::uint64_t size = e.size;
      return open_bytes(std::make_unique<WindowSource>(std::move(outer), *at, size), display, options);
    }
  std::string how = e.encrypted ? "an encrypted one" : "one compressed with " + method_name(e.method);
  if (e.is_symlink || e.special != SpecialMember::none) how = "a link or special member";
  fail(ErrorKind::unsupported, display, "an archive stored as it is in " + outer->display_name() + " (read in place)",
       how,
       "extract it once ('frugal extract " + outer->display_name() + " " + e.name + " -C DIR') and give DIR/" + e.name);
}

// Whether some entry of `a` lies under folder `root/`.
bool has_folder(const Archive& a, const std::string& root) {
  const std::string prefix = root + "/";
  for (const ZipEntry& e : a.entries())
    if (e.name.size() > prefix.size() && e.name.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// One level of DATA:REST: `name` as a file entry (an archive inside) or a folder; nullptr (and `a`
// kept) when it is neither.
std::unique_ptr<Archive> open_level(std::unique_ptr<Archive>& a, const std::string& name,
                                    const ArchiveOptions& options) {
  const std::string norm = normalize_relative(name);
  if (norm.empty()) return nullptr;
  if (name.back() != '/')
    if (auto i = a->find(norm); i && !a->entries()[*i].is_dir) return open_nested(std::move(a), *i, options);
  if (has_folder(*a, norm)) return open_sub_archive(std::move(a), norm);
  return nullptr;
}

std::unique_ptr<Archive> descend(std::unique_ptr<Archive> a, std::string rest, const ArchiveOptions& options) {
  while (!rest.empty()) {
    if (auto next = open_level(a, rest, options)) return next;
    bool found = false;
    for (std::size_t colon = rest.find(':'); colon != std::string::npos; colon = rest.find(':', colon + 1)) {
      if (auto next = open_level(a, rest.substr(0, colon), options)) {
        a = std::move(next);
        rest = rest.substr(colon + 1);
        found = true;
        break;
      }
    }
    if (!found) {
      auto sub = open_sub_archive(std::move(a), normalize_relative(rest).empty() ? rest : normalize_relative(rest));
      return sub;  // not reached: no entry lies under it, and open_sub_archive says what there is
    }
  }
  return a;
}

}  // namespace

fs::path default_index_cache_dir() {
  if (const char* d = std::getenv("FRUGAL_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fs::path(d) / "frugal";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".cache" / "frugal";
  return {};
}

DataSpec parse_data_spec(const std::string& text) {
  if (exists(text)) return {text, ""};
  // "a.tar::b.tar" joins shard patterns (is_shard_pattern), also when a.tar exists: never "a.tar"
  // with an entry ":b.tar" inside it.
  if (text.find("::") != std::string::npos) return {text, ""};
  for (std::size_t colon = text.rfind(':'); colon != std::string::npos && colon > 0;
       colon = text.rfind(':', colon - 1)) {
    const std::string base = text.substr(0, colon);
    if (exists(base)) return {base, text.substr(colon + 1)};
    if (colon == 0) break;
  }
  return {text, ""};
}

std::optional<fs::path> decompressed_cache_file(const std::string& data, const fs::path& dir) {
  const fs::path base = parse_data_spec(data).base;
  if (!exists(base.string()) || is_dir(base.string())) return std::nullopt;
  try {
    if (!is_compressed_tar(file_type(base))) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;  // unreadable: opening the data says so
  }
  fs::path in = dir;
  if (in.empty()) {
    const fs::path cache = default_index_cache_dir();
    if (cache.empty()) return std::nullopt;
    in = cache / "decompressed";
  }
  return decompressed_tar_path(base, in);
}

bool is_shard_pattern(const std::string& text) {
  if (exists(text)) return false;
  const auto open = text.find('{');
  return (open != std::string::npos && text.find('}', open) != std::string::npos) ||
         text.find_first_of("*?[") != std::string::npos || text.find("::") != std::string::npos;
}

std::unique_ptr<Archive> Archive::open(std::unique_ptr<ByteSource> source, std::string display_name,
                                       const ArchiveOptions& options) {
  return open_bytes(std::move(source), std::move(display_name), options);
}

std::unique_ptr<Archive> Archive::open(const fs::path& path, const ArchiveOptions& options) {
  DataSpec spec = parse_data_spec(path.string());
  // DATA:SPLIT on a DatasetDict folder: that split's save_to_disk folder, read by itself.
  if (!spec.rest.empty() && is_dir(spec.base.string()))
    if (const auto splits = hf_dataset_dict_splits(spec.base)) {
      const std::size_t end = spec.rest.find_first_of("/:");
      if (std::find(splits->begin(), splits->end(), spec.rest.substr(0, end)) != splits->end()) {
        spec.base /= spec.rest.substr(0, end);
        spec.rest = end == std::string::npos ? "" : spec.rest.substr(end + 1);
      }
    }
  std::unique_ptr<Archive> a = descend(open_base(spec.base.string(), options), spec.rest, options);
  if (!options.root.empty()) {
    const std::string root = normalize_relative(options.root);
    if (root.empty())
      fail(ErrorKind::usage, "{data_root}", "a folder inside the data (e.g. train/)", "'" + options.root + "'",
           "name it relative to the top of the data, without '..'");
    a = open_sub_archive(std::move(a), root);
  }
  return a;
}

}  // namespace frugal
