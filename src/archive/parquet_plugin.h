// The seam between the parquet reader (parquet_archive.cpp, in the archive library) and Apache
// Arrow, which lives in a plugin loaded only when a parquet file is opened:
// libfrugal_arrow_parquet.so (src/parquet_plugin/, linked to pyarrow's libarrow and libparquet).
//
// Why a plugin: linked into the archive library, Arrow (60 MB of pyarrow's shared libraries) became
// a load-time dependency of every frugal binary and test, 10 ms at each start, and of the binaries
// carried to the GPU machine, where there is no pyarrow and no room to carry it. Loaded with
// dlopen, it costs nothing until parquet is read, and a machine without it refuses parquet saying so.
//
// Only the C++ standard library's types cross this seam (both sides share libstdc++): the plugin
// has its own copy of nothing of frugal's. Errors are std::runtime_error carrying the text to show;
// a row group whose declared sizes need more than the plugin's memory cap is std::length_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace frugal::parquet_plugin {

inline constexpr int kVersion = 1;

// The footer's limits (parquet_footer.h): frugal walks a footer against them before the plugin
// opens the file, and the plugin gives Arrow's Thrift reader the same bounds as a second line.
// Hugging Face footers take kilobytes (70,000 MNIST rows in row groups of 100: 1.4 MB, statistics
// included); 16 MiB is ten times that.
inline constexpr std::int64_t kMaxFooterBytes = std::int64_t{16} << 20;
// What Thrift may allocate for one footer (its estimate: parquet_footer.h), far within the 1 GiB
// one read of a parquet file may take.
inline constexpr std::uint64_t kMaxFooterMemory = std::uint64_t{256} << 20;
// A struct that is a list's element, counted at this: parquet's largest, ColumnChunk with its
// ColumnMetaData and statistics inline, takes about 700 bytes in Arrow 26's Thrift classes.
inline constexpr std::uint64_t kFooterStructBytes = 1024;
// Arrow's Thrift limits (defaults 100 MB a string, a million elements a list), which the footer's
// walk keeps too: no string longer than a footer, no list of more than 65,536 elements (a list is
// allocated for its count before its elements are read: 47 MB of ColumnChunks at most; a footer of
// 16 MiB holds no more row groups of a Hugging Face file's three column chunks).
inline constexpr std::int32_t kThriftStringLimit = static_cast<std::int32_t>(kMaxFooterBytes);
inline constexpr std::int32_t kThriftContainerLimit = 65536;

// The file's bytes, read at any offset from any thread (frugal's ByteSource behind it).
class Input {
 public:
  virtual ~Input() = default;
  virtual std::int64_t size() const = 0;
  // Exactly n bytes at offset into out; "" when done, else what went wrong.
  virtual std::string read_at(std::int64_t offset, std::int64_t n, void* out) const = 0;
  // The bytes in place when they are mapped, else nullptr (read_at is used then).
  virtual const std::uint8_t* view(std::int64_t offset, std::int64_t n) const = 0;
};

struct Field {
  std::string name, type;  // type as Arrow prints it, for messages
  bool image = false;      // a struct with a binary "bytes" child (datasets' Image feature)
  bool integer = false;
};

// One row group's image bytes, decoded: kept by the reader's cache while rows are copied out.
class ImageColumn {
 public:
  virtual ~ImageColumn() = default;
  virtual std::int64_t length() const = 0;
  virtual bool is_null(std::int64_t row) const = 0;                         // the struct or its bytes null
  virtual std::span<const std::uint8_t> bytes(std::int64_t row) const = 0;  // empty when null
};

// One parquet file, its footer parsed. Thread-safe: read_images may run on many threads at once.
class File {
 public:
  virtual ~File() = default;
  virtual const std::vector<Field>& fields() const = 0;
  virtual std::string metadata(const std::string& key) const = 0;  // the schema's key-value metadata; "" when absent
  virtual std::int64_t rows() const = 0;
  virtual int row_groups() const = 0;
  virtual std::int64_t row_group_rows(int group) const = 0;
  // What the image column's bytes of `group` declare they decode to (before reading them).
  virtual std::uint64_t image_bytes_declared(int group, int field) const = 0;
  // Every value of an integer field, nullopt for a null.
  virtual std::vector<std::optional<std::int64_t>> integers(int field) const = 0;
  virtual std::shared_ptr<const ImageColumn> images(int group, int field) const = 0;
};

}  // namespace frugal::parquet_plugin

// The plugin's one symbol: opens `input` (kept alive by the file), or throws std::runtime_error.
extern "C" {
using frugal_parquet_open_fn = frugal::parquet_plugin::File* (*)(int version,
                                                                 std::shared_ptr<frugal::parquet_plugin::Input> input);
}
inline constexpr const char* kFrugalParquetOpenSymbol = "frugal_parquet_open";
// The same plugin's reader of Arrow IPC streams and files (plugin/arrow_ipc.cpp): one File per
// .arrow file, a record batch where parquet has a row group (image_bytes_declared: the batch's
// whole body as its message declares it).
inline constexpr const char* kFrugalArrowIpcOpenSymbol = "frugal_arrow_ipc_open";
