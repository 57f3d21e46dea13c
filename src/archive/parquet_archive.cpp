// Hugging Face parquet files read in place (data_source.h has the design): one entry per row whose
// image has bytes, read from a bounded cache of decoded row groups, the row group being parquet's
// unit of I/O. Arrow does the parquet decoding, in a plugin loaded on the first parquet file
// (parquet_plugin.h says why); without it parquet is refused saying so.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <atomic>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "archive/parquet_footer.h"
#include "archive/parquet_index_cache.h"
#include "archive/parquet_plugin.h"
#include "archive/readers.h"
#include "frugal/archive/data_source.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/text.h"
#include "frugal/util/units.h"

#ifndef FRUGAL_PARQUET
#define FRUGAL_PARQUET 0  // configured with -DFRUGAL_PARQUET=OFF: no plugin was built
#endif

namespace frugal {
namespace {

namespace pp = parquet_plugin;

// One row group's image column, decoded, may take at most this much memory: the reader holds a few.
constexpr std::uint64_t kMaxRowGroupImageBytes = std::uint64_t{512} << 20;
// Decoded row groups kept for reads; the epoch order keeps its window of groups within half of it.
constexpr std::uint64_t kCacheBytes = std::uint64_t{256} << 20;
// The huggingface metadata read for class names, at most: ImageNet-21k's 21,841 names take 0.7 MB.
// More is refused, not dropped (its classes would silently become numbers).
constexpr std::size_t kMaxMetadataJson = std::size_t{4} << 20;
constexpr std::uint64_t kMaxRows = std::uint64_t{1} << 31;

std::atomic<std::uint64_t> row_groups_read{0};

#if FRUGAL_PARQUET
// Where the plugin is: $FRUGAL_PARQUET_PLUGIN, else lib/ beside the executable's bin/ (an
// install, the build tree), else where this build made it.
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
  if (const char* p = std::getenv("FRUGAL_PARQUET_PLUGIN"); p && *p) return {p};
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path bin =
        std::filesystem::path(std::string(exe, static_cast<std::size_t>(n))).parent_path();
    out.push_back((bin.parent_path() / "lib" / "libfrugal_arrow_parquet.so").string());
  }
#ifdef FRUGAL_PARQUET_PLUGIN_PATH
  out.push_back(FRUGAL_PARQUET_PLUGIN_PATH);
#endif
  return out;
}
#endif

// The plugin's entry point for parquet (or, with `arrow`, for Arrow IPC files), loaded once; throws
// Error(unsupported) naming `file` when there is none.
frugal_parquet_open_fn plugin(const std::string& file, bool arrow = false) {
  static std::mutex mu;
  static frugal_parquet_open_fn open[2] = {nullptr, nullptr};
  static std::string tried[2];
  std::lock_guard<std::mutex> lock(mu);
  if (open[arrow]) return open[arrow];
  const std::string what = arrow ? "a Hugging Face Arrow file (.arrow)" : "a Hugging Face parquet file";
#if FRUGAL_PARQUET
  if (tried[arrow].empty())
    for (const std::string& path : plugin_candidates()) {
      if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        if (void* sym = ::dlsym(h, arrow ? kFrugalArrowIpcOpenSymbol : kFrugalParquetOpenSymbol)) {
          open[arrow] = reinterpret_cast<frugal_parquet_open_fn>(sym);
          return open[arrow];
        }
      }
      const char* why = ::dlerror();
      tried[arrow] += (tried[arrow].empty() ? "" : "; ") + path + ": " + (why ? why : "no entry point");
    }
  fail(ErrorKind::unsupported, file, "data this frugal reads",
       what + ", and its " + (arrow ? "Arrow" : "parquet") + " reader could not be loaded (" + tried[arrow] + ")",
       "install pyarrow (scripts/setup.sh installs it into .venv) and rebuild frugal, or set FRUGAL_PARQUET_PLUGIN "
       "to libfrugal_arrow_parquet.so");
#else
  fail(ErrorKind::unsupported, file, "data this frugal reads",
       what + ", and this frugal was built without parquet and Arrow (FRUGAL_PARQUET=OFF)",
       "build frugal with pyarrow installed (scripts/setup.sh) and -DFRUGAL_PARQUET=ON, or convert the set to a "
       "folder of images");
#endif
}

// frugal's ByteSource as the plugin's input.
class SourceInput final : public pp::Input {
 public:
  explicit SourceInput(const ByteSource& src) : src_(src) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(src_.size()); }
  std::string read_at(std::int64_t offset, std::int64_t n, void* out) const override {
    try {
      src_.read_at(static_cast<std::uint64_t>(offset), out, static_cast<std::size_t>(n));
    } catch (const Error& err) {
      return err.what();
    }
    return "";
  }
  const std::uint8_t* view(std::int64_t offset, std::int64_t n) const override {
    auto v = src_.view(static_cast<std::uint64_t>(offset), static_cast<std::size_t>(n));
    return v ? v->data() : nullptr;
  }

 private:
  const ByteSource& src_;
};

// What Arrow or the parquet code says went wrong, as frugal's error for `file` (an Arrow IPC file
// with `arrow`).
[[noreturn]] void refuse_bytes(const std::string& file, const std::string& what, bool arrow = false) {
  if (arrow)
    fail(ErrorKind::invalid, file, "an Arrow IPC file Arrow reads (a Hugging Face .arrow file)", what,
         "the file is damaged or was cut short: save it again (Dataset.save_to_disk) or fetch it again from where "
         "it came from (pyarrow.ipc.open_stream(FILE).read_all() reads it with the same library, to check)");
  fail(ErrorKind::invalid, file, "a parquet file Arrow reads", what,
       "the file is damaged or truncated; copy it again (pyarrow.parquet.read_table() reads it with the same "
       "library, to check)");
}

// A read the plugin refused for frugal's memory cap, the file's sizes needing it (not damage).
[[noreturn]] void refuse_size(const std::string& file, const std::string& what, bool arrow = false) {
  if (arrow)
    fail(ErrorKind::budget, file, "record batches that frugal reads within its 1 GiB a read", what,
         "write it again with smaller record batches (pyarrow: writer.write_table(table, max_chunksize=100)); an "
         "image this large alone is better kept as a file (a folder or zip of images)");
  fail(ErrorKind::budget, file, "row groups that frugal reads within its 1 GiB a read", what,
       "rewrite it with smaller row groups (pyarrow.parquet.write_table(..., row_group_size=10)); an image this "
       "large alone is better kept as a file (a folder or zip of images)");
}

// Runs f, turning the plugin's errors into frugal's naming `file`.
template <class F>
auto guarded(const std::string& file, bool arrow, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::length_error& e) {
    refuse_size(file, e.what(), arrow);
  } catch (const std::exception& e) {
    refuse_bytes(file, e.what(), arrow);
  }
}

const char* extension(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "jpg";
    case ImageFormat::png:
      return "png";
    case ImageFormat::webp:
      return "webp";
    case ImageFormat::gif:
      return "gif";
    case ImageFormat::bmp:
      return "bmp";
    case ImageFormat::tiff:
      return "tif";
    case ImageFormat::heic:
      return "heic";
    case ImageFormat::avif:
      return "avif";
    case ImageFormat::jpeg_xl:
      return "jxl";
    case ImageFormat::jpeg2000:
      return "jp2";
    default:
      return "bin";
  }
}

std::vector<std::string> class_label_names(const nlohmann::json& features, const std::string& column,
                                           const std::string& file);

// Class names from the schema's `huggingface` metadata ({"info": {"features": {COLUMN: {"_type":
// "ClassLabel", "names": [...]}}}}); empty when it has none for that column.
std::vector<std::string> hf_class_names(const std::string& text, const std::string& column, const std::string& file) {
  if (text.size() > kMaxMetadataJson)
    fail(ErrorKind::invalid, file, "huggingface metadata (its class names) of at most " + format_size(kMaxMetadataJson),
         "metadata of " + format_size(text.size()),
         "name the classes with {class_names} FILE after removing the metadata (pyarrow: "
         "table.replace_schema_metadata(), then write_table)");
  if (text.empty() || json_nesting(text) > 16) return {};  // not datasets': unused
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {};
  const nlohmann::json* features = nullptr;
  if (auto info = j.find("info"); info != j.end() && info->is_object())
    if (auto f = info->find("features"); f != info->end() && f->is_object()) features = &*f;
  if (!features) return {};
  return class_label_names(*features, column, file);
}

// The names of feature `column` of `features` when it is a ClassLabel (datasets' features, as its
// metadata and dataset_info.json write them); empty otherwise.
std::vector<std::string> class_label_names(const nlohmann::json& features, const std::string& column,
                                           const std::string& file) {
  auto feature = features.find(column);
  if (feature == features.end() || !feature->is_object()) return {};
  auto type = feature->find("_type");
  auto names = feature->find("names");
  if (type == feature->end() || *type != "ClassLabel" || names == feature->end() || !names->is_array()) return {};
  std::vector<std::string> out;
  for (const auto& n : *names) {
    if (!n.is_string() || n.get<std::string>().empty())
      fail(ErrorKind::invalid, file, "class names (strings) in its ClassLabel feature",
           "a name that is " + std::string(n.is_string() ? "empty" : n.type_name()),
           "give the names with {class_names} FILE");
    out.push_back(n.get<std::string>());
  }
  return out;
}

// One file of the set, open.
struct OpenFile {
  std::unique_ptr<ByteSource> source;
  std::string display, name;  // name: the file name (or as the set names it), prefixing its entries' names
  std::unique_ptr<pp::File> file;
  int image_field = -1, label_field = -1;
  bool arrow = false;  // an Arrow IPC file: a record batch where parquet has a row group
};

// Refuses row group `g` of `f` when its images would take more than the reader's bound (what its
// footer declares; nothing of the group is read).
void check_declared(const OpenFile& f, int g) {
  const std::uint64_t declared =
      guarded(f.display, f.arrow, [&] { return f.file->image_bytes_declared(g, f.image_field); });
  if (declared > kMaxRowGroupImageBytes && f.arrow)
    fail(ErrorKind::budget, f.display, "record batches of at most " + format_size(kMaxRowGroupImageBytes),
         "record batch " + std::to_string(g) + " declaring " + format_size(declared),
         "write it again with smaller record batches (pyarrow: writer.write_table(table, max_chunksize=100))");
  if (declared > kMaxRowGroupImageBytes)
    fail(ErrorKind::budget, f.display, "row groups whose images take at most " + format_size(kMaxRowGroupImageBytes),
         "row group " + std::to_string(g) + " of " + format_size(declared),
         "rewrite it with smaller row groups (pyarrow.parquet.write_table(..., row_group_size=100))");
}

// The image bytes of row group `g` of `f`, within the reader's bound.
std::shared_ptr<const pp::ImageColumn> read_images(const OpenFile& f, int g) {
  check_declared(f, g);
  ++row_groups_read;
  auto images = guarded(f.display, f.arrow, [&] { return f.file->images(g, f.image_field); });
  const std::int64_t rows = f.file->row_group_rows(g);
  if (images->length() != rows)
    refuse_bytes(f.display,
                 std::string(f.arrow ? "record batch " : "row group ") + std::to_string(g) + " of " +
                     std::to_string(images->length()) + " rows where its metadata says " + std::to_string(rows),
                 f.arrow);
  return images;
}

ParquetRow row_of(const pp::ImageColumn& images, std::int64_t r) {
  if (images.is_null(r)) return {ParquetImage::null, ImageFormat::unknown, 0};
  const auto b = images.bytes(r);
  if (b.empty()) return {ParquetImage::empty, ImageFormat::unknown, 0};
  return {ParquetImage::bytes, sniff_format(b.first(std::min<std::size_t>(b.size(), 32))), b.size()};
}

// Refuses a footer that declares more rows than the file has bytes, before anything is read: Arrow
// sizes its first buffers by the rows declared (a label column of a 848-byte footer declaring 2^28
// rows took 512 MiB at once; fuzz/parquet_footer_fuzz). Every row holds an image of its own, so a
// real file has many bytes a row; one with more rows than bytes is damaged or made to harm.
void check_rows_declared(const OpenFile& f) {
  const std::uint64_t bytes = f.source->size();
  const auto refuse = [&](const std::string& what, std::int64_t rows) {
    refuse_bytes(f.display,
                 what + " declaring " + std::to_string(rows) + " rows in a file of " + format_size(bytes) +
                     " (more rows than bytes)",
                 f.arrow);
  };
  const auto over = [&](std::int64_t rows) { return rows < 0 || static_cast<std::uint64_t>(rows) > bytes; };
  if (over(f.file->rows())) refuse("a footer", f.file->rows());
  std::uint64_t in_groups = 0;
  for (int g = 0; g < f.file->row_groups(); ++g) {
    const std::int64_t n = f.file->row_group_rows(g);
    const std::string group = std::string(f.arrow ? "record batch " : "row group ") + std::to_string(g);
    if (over(n)) refuse(group, n);
    in_groups += static_cast<std::uint64_t>(n);
    if (in_groups > bytes) refuse("row groups 0 to " + std::to_string(g), static_cast<std::int64_t>(in_groups));
  }
}

// What open_file() learns of `f`'s rows, read from the file itself: the label column, then every
// row group's images (the cost the index cache saves).
ParquetRowIndex read_row_index(const OpenFile& f) {
  ParquetRowIndex index;
  guarded(f.display, f.arrow, [&] {
    check_rows_declared(f);
    return 0;
  });
  if (f.label_field >= 0) {
    index.labels = guarded(f.display, f.arrow, [&] { return f.file->integers(f.label_field); });
    if (static_cast<std::int64_t>(index.labels.size()) != f.file->rows())
      refuse_bytes(f.display,
                   std::to_string(index.labels.size()) + " labels for " + std::to_string(f.file->rows()) + " rows",
                   f.arrow);
  }
  for (int g = 0; g < f.file->row_groups(); ++g) {
    const auto images = read_images(f, g);
    for (std::int64_t r = 0; r < images->length(); ++r) index.rows.push_back(row_of(*images, r));
  }
  if (!index.labels.empty() && index.labels.size() != index.rows.size())
    refuse_bytes(f.display,
                 std::to_string(index.labels.size()) + " labels for " + std::to_string(index.rows.size()) +
                     " rows in its row groups",
                 f.arrow);
  return index;
}

// Where `src`'s offset 0 lies in the concatenation of its files (a parquet file inside a zip).
std::uint64_t base_of(const ByteSource& src) {
  if (auto* w = dynamic_cast<const WindowSource*>(&src)) return w->base();
  return 0;
}

// `f`'s rows: from the index cache when it holds them for these bytes, else read from the file
// (and then cached when it has rows enough to be worth it).
ParquetRowIndex row_index(const OpenFile& f, const ParquetShape& shape, const ArchiveOptions& options) {
  const std::filesystem::path dir = index_cache_dir(options);
  std::optional<ParquetCacheIdentity> id;
  std::filesystem::path file;
  if (!dir.empty() && shape.rows() >= kParquetIndexCacheMin) id = parquet_cache_identity(*f.source, base_of(*f.source));
  if (id) {
    file = parquet_cache_file(dir, *id);
    if (auto cached = load_parquet_cache(file, *id, shape)) return std::move(*cached);
  }
  ParquetRowIndex index = read_row_index(f);
  if (id && index.rows.size() >= kParquetIndexCacheMin) {
    try {
      save_parquet_cache(file, *id, shape, index);
    } catch (const Error& err) {
      note(f.display + ": its rows could not be cached (" + err.what() + "); every open reads all its images again");
    }
  }
  return index;
}

// The ClassLabel features of a save_to_disk folder's dataset_info.json ({"features": {COLUMN:
// {"names": [...], "_type": "ClassLabel"}}}), read within kMaxMetadataJson; nullopt when it holds
// no features (a file of other JSON names nothing), exit 3 naming it when it is no JSON.
std::optional<nlohmann::json> dataset_info_features(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(ErrorKind::io, path, "a readable dataset_info.json", ec.message(), "check the folder's permissions");
  if (size > kMaxMetadataJson)
    fail(ErrorKind::invalid, path, "a dataset_info.json of at most " + format_size(kMaxMetadataJson), format_size(size),
         "name the classes with {class_names} FILE and move dataset_info.json aside");
  auto src = open_byte_source(path);
  std::string text(static_cast<std::size_t>(src->size()), '\0');
  if (!text.empty()) src->read_at(0, text.data(), text.size());
  nlohmann::json j = json_nesting(text) > 64 ? nlohmann::json(nlohmann::json::value_t::discarded)
                                             : nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    fail(ErrorKind::invalid, path, "the JSON object Hugging Face datasets writes (its features)",
         j.is_discarded() ? "text that is no JSON (or nested too deep)" : std::string("JSON ") + j.type_name(),
         "save the dataset again (Dataset.save_to_disk), or move dataset_info.json aside and name the classes with "
         "{class_names} FILE");
  auto f = j.find("features");
  if (f == j.end() || !f->is_object()) return std::nullopt;
  return std::move(*f);
}

class ParquetArchive final : public Archive {
 public:
  ParquetArchive(std::vector<ParquetFile> files, std::string display, const ArchiveOptions& options, bool arrow = false,
                 std::string dataset_info = "")
      : display_(std::move(display)), arrow_(arrow), dataset_info_(std::move(dataset_info)) {
    for (auto& pf : files) {
      auto f = std::make_unique<OpenFile>();
      f->source = std::move(pf.source);
      f->display = std::move(pf.display);
      f->name = pf.name.empty() ? std::filesystem::path(f->display).filename().string() : std::move(pf.name);
      f->arrow = arrow;
      files_.push_back(std::move(f));
    }
    for (std::size_t i = 0; i < files_.size(); ++i) open_file(*files_[i], i, options);
    by_name_.reserve(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) by_name_.emplace(entries_[i].name, i);
  }

  const char* format() const override { return arrow_ ? "arrow" : "parquet"; }
  const std::vector<ZipEntry>& entries() const override { return entries_; }
  std::optional<std::size_t> find(std::string_view name) const override {
    auto it = by_name_.find(std::string(name));
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return *files_.front()->source; }
  const EntryLabels* entry_labels() const override { return &labels_; }
  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const override {
    (void)i;
    return std::nullopt;  // bytes live in a decoded row group that the cache may drop: read() copies
  }

  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    if (i >= entries_.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(entries_.size()), std::to_string(i),
           "");
    const auto group = decoded(labels_.io_group[i]);
    const auto bytes = group->bytes(row_[i]);
    if (bytes.size() != entries_[i].size)
      fail(ErrorKind::invalid, display_ + ":" + entries_[i].name, "the image bytes read when it was opened",
           std::to_string(bytes.size()) + " bytes where there were " + std::to_string(entries_[i].size),
           "the file changed while frugal read it; run the command again");
    out.assign(bytes.begin(), bytes.end());
  }

 private:
  struct Group {
    std::size_t file;
    int local;
  };

  void open_file(OpenFile& f, std::size_t index, const ArchiveOptions& options) {
    const frugal_parquet_open_fn open = plugin(f.display, f.arrow);
    if (!f.arrow) check_parquet_footer(*f.source, f.display);  // before Arrow's Thrift reader expands it
    f.file.reset(
        guarded(f.display, f.arrow, [&] { return open(pp::kVersion, std::make_shared<SourceInput>(*f.source)); }));
    choose_columns(f);
    check_same_columns(f, index);
    if (f.label_field >= 0) read_class_names(f);
    ParquetShape shape{f.image_field, f.label_field, {}};
    for (int g = 0; g < f.file->row_groups(); ++g) {
      check_declared(f, g);
      shape.group_rows.push_back(f.file->row_group_rows(g));
    }
    const ParquetRowIndex rows = row_index(f, shape, options);
    std::size_t file_row = 0;
    for (int g = 0; g < f.file->row_groups(); ++g) {
      groups_.push_back({index, g});
      std::uint64_t group_bytes = 0;
      for (std::int64_t r = 0; r < shape.group_rows[static_cast<std::size_t>(g)]; ++r, ++file_row)
        group_bytes += add_row(f, rows, r, file_row);
      labels_.io_group_bytes.push_back(group_bytes);
    }
  }

  // Row `file_row` of `f` (row r of its row group) as an entry (its size returned), or counted as
  // skipped.
  std::uint64_t add_row(const OpenFile& f, const ParquetRowIndex& rows, std::int64_t r, std::size_t file_row) {
    const std::string row_name = f.name + "/" + std::to_string(file_row);
    const ParquetRow& row = rows.rows[file_row];
    if (row.image != ParquetImage::bytes) {
      const std::string why = row.image == ParquetImage::null ? "no image bytes (null)" : "empty image bytes";
      if (labels_.skipped[why]++ == 0) labels_.examples[why] = display_ + ":" + row_name;
      return 0;
    }
    if (entries_.size() >= kMaxRows)
      fail(ErrorKind::budget, display_, "at most " + std::to_string(kMaxRows) + " rows", "more", "");
    ZipEntry e;
    e.name = row_name + "." + extension(row.format);
    e.raw_name = e.name;
    e.has_crc32 = false;
    e.size = e.compressed_size = row.size;
    entries_.push_back(std::move(e));
    row_.push_back(r);
    labels_.io_group.push_back(static_cast<std::uint32_t>(groups_.size() - 1));
    std::optional<std::int64_t> label;
    if (!rows.labels.empty()) {
      const auto& l = rows.labels[file_row];
      if (l && *l >= 0) label = l;
    }
    labels_.label.push_back(label);
    return row.size;
  }

  // The first column named image/img holding {bytes, path} structs, else the first such column;
  // the label: an integer column named label/labels, else the first integer column.
  void choose_columns(OpenFile& f) {
    const std::vector<pp::Field>& fields = f.file->fields();
    std::string columns;
    bool named = false;
    for (int k = 0; k < static_cast<int>(fields.size()); ++k) {
      const pp::Field& field = fields[static_cast<std::size_t>(k)];
      columns += (columns.empty() ? "" : ", ") + field.name + " (" + field.type + ")";
      const bool is_named = field.name == "image" || field.name == "img";
      if (field.image && (f.image_field < 0 || (is_named && !named))) {
        f.image_field = k;
        named = named || is_named;
      }
    }
    for (int k = 0; k < static_cast<int>(fields.size()) && f.label_field < 0; ++k)
      if ((fields[static_cast<std::size_t>(k)].name == "label" ||
           fields[static_cast<std::size_t>(k)].name == "labels") &&
          fields[static_cast<std::size_t>(k)].integer)
        f.label_field = k;
    for (int k = 0; k < static_cast<int>(fields.size()) && f.label_field < 0; ++k)
      if (fields[static_cast<std::size_t>(k)].integer) f.label_field = k;
    if (f.image_field < 0)
      fail(ErrorKind::invalid, f.display,
           "an image column as Hugging Face datasets writes it (a struct of bytes and path)",
           "the columns " + (columns.empty() ? std::string("(none)") : columns),
           "frugal trains on images; a table of other data is not a dataset it reads");
    if (f.label_field >= 0) labels_.column = fields[static_cast<std::size_t>(f.label_field)].name;
  }

  // Every file of a set names its columns alike (a set written by one datasets call does).
  void check_same_columns(const OpenFile& f, std::size_t index) const {
    if (index == 0) return;
    const OpenFile& first = *files_.front();
    auto name = [](const OpenFile& x, int k) {
      return k < 0 ? std::string() : x.file->fields()[static_cast<std::size_t>(k)].name;
    };
    if (name(f, f.image_field) != name(first, first.image_field) ||
        name(f, f.label_field) != name(first, first.label_field))
      fail(ErrorKind::invalid, f.display,
           "the image and label columns of " + first.display + " (" + name(first, first.image_field) + ", " +
               (first.label_field < 0 ? std::string("none") : name(first, first.label_field)) + ")",
           name(f, f.image_field) + ", " + (f.label_field < 0 ? std::string("none") : name(f, f.label_field)),
           "give the files of one split (e.g. 'data/train-*.parquet'), not two tables");
  }

  // The label column's ClassLabel names: dataset_info.json's (a save_to_disk folder), else the
  // file's huggingface metadata.
  void read_class_names(const OpenFile& f) {
    std::vector<std::string> names;
    if (!dataset_info_.empty()) {
      if (!info_features_) info_features_ = dataset_info_features(dataset_info_).value_or(nlohmann::json::object());
      names = class_label_names(*info_features_, labels_.column, dataset_info_);
    }
    if (names.empty()) names = hf_class_names(f.file->metadata("huggingface"), labels_.column, f.display);
    if (names.empty()) return;
    if (!labels_.class_names.empty() && labels_.class_names != names)
      fail(ErrorKind::invalid, f.display, "the class names of " + names_from_ + " (its huggingface metadata)",
           "other names", "give the files of one dataset, or name the classes with {class_names} FILE");
    labels_.class_names = std::move(names);
    names_from_ = f.display;
  }

  // Row group `id` decoded, from the cache when it is there (shared: a reader keeps it while it
  // copies, whatever the cache drops meanwhile). Two threads missing the same group both decode it.
  std::shared_ptr<const pp::ImageColumn> decoded(std::uint32_t id) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = cache_.find(id); it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.second);
        return it->second.first;
      }
    }
    const Group& g = groups_[id];
    auto images = read_images(*files_[g.file], g.local);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(id); it != cache_.end()) return it->second.first;
    lru_.push_front(id);
    cache_.emplace(id, std::make_pair(images, lru_.begin()));
    cached_bytes_ += labels_.io_group_bytes[id];
    while (cached_bytes_ > kCacheBytes && lru_.size() > 1) {
      const std::uint32_t old = lru_.back();
      lru_.pop_back();
      cache_.erase(old);
      cached_bytes_ -= labels_.io_group_bytes[old];
    }
    return images;
  }

  std::string display_, names_from_;
  bool arrow_ = false;
  std::string dataset_info_;                     // a save_to_disk folder's dataset_info.json, or ""
  std::optional<nlohmann::json> info_features_;  // its features, read with the first file's class names
  std::vector<std::unique_ptr<OpenFile>> files_;
  std::vector<Group> groups_;
  std::vector<ZipEntry> entries_;
  std::vector<std::int64_t> row_;  // the entry's row within its row group
  EntryLabels labels_;
  std::unordered_map<std::string, std::size_t> by_name_;

  mutable std::mutex mu_;
  mutable std::list<std::uint32_t> lru_;
  using Cached = std::pair<std::shared_ptr<const pp::ImageColumn>, std::list<std::uint32_t>::iterator>;
  mutable std::unordered_map<std::uint32_t, Cached> cache_;
  mutable std::uint64_t cached_bytes_ = 0;
};

}  // namespace

bool parquet_built() { return FRUGAL_PARQUET != 0; }

std::uint64_t detail::parquet_row_groups_read() { return row_groups_read.load(); }

std::unique_ptr<Archive> open_parquet_archive(std::vector<ParquetFile> files, std::string display,
                                              const ArchiveOptions& options) {
  if (files.empty()) fail(ErrorKind::usage, display, "at least one parquet file", "none", "check the pattern");
  plugin(files.front().display);  // refused before anything is read when there is no reader
  return std::make_unique<ParquetArchive>(std::move(files), std::move(display), options);
}

std::unique_ptr<Archive> open_arrow_archive(std::vector<ParquetFile> files, std::string display,
                                            std::string dataset_info, const ArchiveOptions& options) {
  if (files.empty()) fail(ErrorKind::usage, display, "at least one .arrow file", "none", "check the folder");
  plugin(files.front().display, true);  // refused before anything is read when there is no reader
  return std::make_unique<ParquetArchive>(std::move(files), std::move(display), options, true, std::move(dataset_info));
}

}  // namespace frugal
