// libfrugal_arrow_parquet.so: parquet files read through Apache Arrow's C++ library (pyarrow's),
// behind the seam of archive/parquet_plugin.h. Nothing of frugal's is linked in: errors leave as
// std::runtime_error with the text the reader shows.
#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's spelling
#define FRUGAL_ASAN 1
#endif
#endif

#include "archive/parquet_plugin.h"

namespace frugal::parquet_plugin {
namespace {

// Input as Arrow's file: positioned reads from any thread, zero-copy where the bytes are mapped
// (the input outlives every buffer: the File holds it, the reader holds the File).
class InputFile final : public arrow::io::RandomAccessFile {
 public:
  InputFile(std::shared_ptr<Input> in, arrow::MemoryPool* pool) : in_(std::move(in)), pool_(pool), size_(in_->size()) {}
  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<std::int64_t> Tell() const override { return pos_; }
  arrow::Status Seek(std::int64_t position) override {
    if (position < 0 || position > size_) return arrow::Status::IOError("seek outside the file");
    pos_ = position;
    return arrow::Status::OK();
  }
  arrow::Result<std::int64_t> GetSize() override { return size_; }
  arrow::Result<std::int64_t> Read(std::int64_t n, void* out) override {
    ARROW_ASSIGN_OR_RAISE(std::int64_t got, ReadAt(pos_, n, out));
    pos_ += got;
    return got;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(std::int64_t n) override {
    ARROW_ASSIGN_OR_RAISE(auto buf, ReadAt(pos_, n));
    pos_ += buf->size();
    return buf;
  }
  arrow::Result<std::int64_t> ReadAt(std::int64_t position, std::int64_t nbytes, void* out) override {
    if (position < 0 || nbytes < 0 || position > size_) return arrow::Status::IOError("read outside the file");
    const std::int64_t n = std::min(nbytes, size_ - position);
    if (n > 0)
      if (std::string why = in_->read_at(position, n, out); !why.empty()) return arrow::Status::IOError(why);
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(std::int64_t position, std::int64_t nbytes) override {
    if (position < 0 || nbytes < 0 || position > size_) return arrow::Status::IOError("read outside the file");
    const std::int64_t n = std::min(nbytes, size_ - position);
    if (const std::uint8_t* v = in_->view(position, n)) return std::make_shared<arrow::Buffer>(v, n);
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> buf, arrow::AllocateBuffer(n, pool_));
    ARROW_ASSIGN_OR_RAISE(std::int64_t got, ReadAt(position, n, buf->mutable_data()));
    (void)got;
    return buf;
  }

 private:
  std::shared_ptr<Input> in_;
  arrow::MemoryPool* pool_;  // the File's: buffers read here may outlive one read
  std::int64_t size_, pos_ = 0;
  bool closed_ = false;
};

// Arrow's memory for one read, capped: a file of 1.4 kB made Arrow's reader allocate 20 GB for its
// declared page sizes (pyarrow's read_table too). A read that would hold more than kMaxReadBytes is
// refused instead. The memory is pyarrow's jemalloc pool (it keeps freed pages a while: a row
// group's fresh pages from the system allocator made opening the photo set 2.4x slower), except
// under AddressSanitizer (the fuzz build), where the system allocator's lets it see frugal's reads.
constexpr std::int64_t kMaxReadBytes = std::int64_t{1} << 30;

class CappedPool final : public arrow::MemoryPool {
 public:
  arrow::Status Allocate(std::int64_t size, std::int64_t alignment, std::uint8_t** out) override {
    if (size < 0 || !take(size)) return refused(size);
    const arrow::Status s = base_->Allocate(size, alignment, out);
    if (!s.ok()) used_ -= size;
    return s;
  }
  arrow::Status Reallocate(std::int64_t old_size, std::int64_t new_size, std::int64_t alignment,
                           std::uint8_t** ptr) override {
    if (new_size < 0 || (new_size > old_size && !take(new_size - old_size))) return refused(new_size);
    const arrow::Status s = base_->Reallocate(old_size, new_size, alignment, ptr);
    if (!s.ok() && new_size > old_size) used_ -= new_size - old_size;
    if (s.ok() && new_size < old_size) used_ -= old_size - new_size;
    return s;
  }
  void Free(std::uint8_t* buffer, std::int64_t size, std::int64_t alignment) override {
    base_->Free(buffer, size, alignment);
    used_ -= size;
  }
  std::int64_t bytes_allocated() const override { return used_; }
  std::int64_t total_bytes_allocated() const override { return base_->total_bytes_allocated(); }
  std::int64_t num_allocations() const override { return base_->num_allocations(); }
  std::string backend_name() const override { return base_->backend_name(); }
  bool refused_any() const { return refused_any_; }

 private:
  bool take(std::int64_t n) {
    if (used_.fetch_add(n) + n <= kMaxReadBytes) return true;
    used_ -= n;
    refused_any_ = true;
    return false;
  }
  static arrow::Status refused(std::int64_t size) {
    return arrow::Status::OutOfMemory("a read of " + std::to_string(size) +
                                      " bytes more than the 1 GiB one row group may take: the file declares sizes " +
                                      "it does not hold, or its row groups are very large");
  }
#if defined(__SANITIZE_ADDRESS__) || defined(FRUGAL_ASAN)
  arrow::MemoryPool* base_ = arrow::system_memory_pool();
#else
  arrow::MemoryPool* base_ = arrow::default_memory_pool();
#endif
  std::atomic<std::int64_t> used_{0};
  std::atomic<bool> refused_any_{false};
};

// Arrow's reader properties: `pool`, and Thrift's limits for footers and page headers
// (parquet_plugin.h; frugal has walked the footer against the same before it is opened).
parquet::ReaderProperties properties(arrow::MemoryPool* pool) {
  parquet::ReaderProperties props(pool);
  props.set_thrift_string_size_limit(kThriftStringLimit);
  props.set_thrift_container_size_limit(kThriftContainerLimit);
  return props;
}

void check(const arrow::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

template <class T>
T value(arrow::Result<T> r) {
  check(r.status());
  return std::move(r).ValueUnsafe();
}

bool binary_type(const arrow::DataType& t) {
  return t.id() == arrow::Type::BINARY || t.id() == arrow::Type::LARGE_BINARY;
}

std::optional<int> bytes_child(const arrow::DataType& t) {
  if (t.id() != arrow::Type::STRUCT) return std::nullopt;
  for (int k = 0; k < t.num_fields(); ++k)
    if (t.field(k)->name() == "bytes" && binary_type(*t.field(k)->type())) return k;
  return std::nullopt;
}

std::optional<std::int64_t> integer_at(const arrow::Array& a, std::int64_t i) {
  if (a.IsNull(i)) return std::nullopt;
  switch (a.type_id()) {
#define FRUGAL_INT(ID, T) \
  case arrow::Type::ID:   \
    return static_cast<std::int64_t>(static_cast<const arrow::NumericArray<arrow::T>&>(a).Value(i));
    FRUGAL_INT(INT8, Int8Type)
    FRUGAL_INT(INT16, Int16Type)
    FRUGAL_INT(INT32, Int32Type)
    FRUGAL_INT(INT64, Int64Type)
    FRUGAL_INT(UINT8, UInt8Type)
    FRUGAL_INT(UINT16, UInt16Type)
    FRUGAL_INT(UINT32, UInt32Type)
#undef FRUGAL_INT
    case arrow::Type::UINT64: {
      const auto v = static_cast<const arrow::UInt64Array&>(a).Value(i);
      if (v > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<std::int64_t>(v);
    }
    default:
      return std::nullopt;
  }
}

class Images final : public ImageColumn {
 public:
  Images(std::shared_ptr<CappedPool> pool, std::shared_ptr<arrow::Array> a)
      : pool_(std::move(pool)), a_(std::move(a)) {}
  std::int64_t length() const override { return a_->length(); }
  bool is_null(std::int64_t row) const override { return a_->IsNull(row); }
  std::span<const std::uint8_t> bytes(std::int64_t row) const override {
    if (a_->IsNull(row)) return {};
    std::string_view v = a_->type_id() == arrow::Type::LARGE_BINARY
                             ? static_cast<const arrow::LargeBinaryArray&>(*a_).GetView(row)
                             : static_cast<const arrow::BinaryArray&>(*a_).GetView(row);
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
  }

 private:
  std::shared_ptr<CappedPool> pool_;  // its buffers' pool: outlives them (members die in reverse order)
  std::shared_ptr<arrow::Array> a_;
};

class ArrowFile final : public File {
 public:
  explicit ArrowFile(std::shared_ptr<Input> in) : input_(std::make_shared<InputFile>(std::move(in), &open_pool_)) {
    try {
      meta_ = parquet::ParquetFileReader::Open(input_, properties(&open_pool_))->metadata();
      check(reader(&open_pool_)->GetSchema(&schema_));
    } catch (const parquet::ParquetException& e) {
      throw std::runtime_error(e.what());
    }
    for (int k = 0; k < schema_->num_fields(); ++k) {
      const auto& f = *schema_->field(k);
      fields_.push_back(
          {f.name(), f.type()->ToString(), bytes_child(*f.type()).has_value(), arrow::is_integer(f.type()->id())});
    }
  }

  const std::vector<Field>& fields() const override { return fields_; }
  std::string metadata(const std::string& key) const override {
    const auto md = schema_->metadata();
    if (!md) return "";
    const int k = md->FindKey(key);
    return k < 0 ? "" : md->value(k);
  }
  std::int64_t rows() const override { return meta_->num_rows(); }
  int row_groups() const override { return meta_->num_row_groups(); }
  std::int64_t row_group_rows(int group) const override { return meta_->RowGroup(group)->num_rows(); }
  std::uint64_t image_bytes_declared(int group, int field) const override {
    const std::int64_t n = meta_->RowGroup(group)->ColumnChunk(bytes_leaf(field))->total_uncompressed_size();
    return n < 0 ? UINT64_MAX : static_cast<std::uint64_t>(n);
  }

  std::vector<std::optional<std::int64_t>> integers(int field) const override {
    try {
      CappedPool pool;
      std::shared_ptr<arrow::ChunkedArray> column;
      check(reader(&pool)->ReadColumn(field, &column));
      std::vector<std::optional<std::int64_t>> out;
      out.reserve(static_cast<std::size_t>(column->length()));
      for (const auto& chunk : column->chunks())
        for (std::int64_t i = 0; i < chunk->length(); ++i) out.push_back(integer_at(*chunk, i));
      return out;
    } catch (const parquet::ParquetException& e) {
      throw std::runtime_error(e.what());
    }
  }

  std::shared_ptr<const ImageColumn> images(int group, int field) const override {
    auto pool = std::make_shared<CappedPool>();
    try {
      return read_images(group, field, pool);
    } catch (const std::exception& e) {
      if (pool->refused_any()) too_large(group, field, e.what());
      if (dynamic_cast<const parquet::ParquetException*>(&e)) throw std::runtime_error(e.what());
      throw;
    }
  }

 private:
  std::shared_ptr<const ImageColumn> read_images(int group, int field, const std::shared_ptr<CappedPool>& pool) const {
    const std::shared_ptr<arrow::Table> table = value(reader(pool.get())->ReadRowGroup(group, {bytes_leaf(field)}));
    const auto chunked = table->column(0);
    std::shared_ptr<arrow::Array> column =
        chunked->num_chunks() == 1 ? chunked->chunk(0) : value(arrow::Concatenate(chunked->chunks(), pool.get()));
    if (column->type_id() != arrow::Type::STRUCT) throw std::runtime_error("an image column that is no struct");
    const auto& st = static_cast<const arrow::StructArray&>(*column);
    const auto child = bytes_child(*st.type());
    if (!child) throw std::runtime_error("an image column without bytes");
    return std::make_shared<Images>(pool, value(st.GetFlattenedField(*child, pool.get())));
  }

  // A read of row group `group` refused by its pool: std::length_error (the seam's "over the cap,
  // not damaged") when the row group's images are large enough to need it, as they declare; else
  // the pages declare more than the footer does (a damaged or hostile file), as `what` says.
  [[noreturn]] void too_large(int group, int field, const std::string& what) const {
    const auto chunk = meta_->RowGroup(group)->ColumnChunk(bytes_leaf(field));
    const std::int64_t stored = chunk->total_compressed_size(), decoded = chunk->total_uncompressed_size();
    if (stored >= 0 && decoded >= 0 && stored + decoded >= kMaxReadBytes / 4) {
      const auto mb = [](std::int64_t n) { return std::to_string((n + (1 << 19)) >> 20) + " MiB"; };
      throw std::length_error("row group " + std::to_string(group) + " whose images take " + mb(stored) +
                              " stored and " + mb(decoded) + " decoded, which Arrow holds at once with their copy: " +
                              "more than the 1 GiB one read of a parquet file may take");
    }
    throw std::runtime_error(what);
  }

  // A reader of its own per call: Arrow's FileReader is not made to be shared between threads,
  // and one made from the parsed footer costs microseconds.
  std::unique_ptr<parquet::arrow::FileReader> reader(arrow::MemoryPool* pool) const {
    auto pf = parquet::ParquetFileReader::Open(input_, properties(pool), meta_);
    parquet::ArrowReaderProperties arrow_props;
    arrow_props.set_use_threads(false);
    return value(parquet::arrow::FileReader::Make(pool, std::move(pf), arrow_props));
  }

  // The leaf column of field.bytes (leaves are numbered depth-first over the schema).
  int bytes_leaf(int field) const {
    const auto* root = meta_->schema();
    for (int c = 0; c < root->num_columns(); ++c) {
      const auto path = root->Column(c)->path()->ToDotVector();
      if (path.size() == 2 && path[0] == schema_->field(field)->name() && path[1] == "bytes") return c;
    }
    throw std::runtime_error("an image column whose bytes have no parquet column");
  }

  CappedPool open_pool_;  // the footer's reads (first: it outlives what was read with it)
  std::shared_ptr<InputFile> input_;
  std::shared_ptr<parquet::FileMetaData> meta_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<Field> fields_;
};

}  // namespace
}  // namespace frugal::parquet_plugin

extern "C" __attribute__((visibility("default"))) frugal::parquet_plugin::File* frugal_parquet_open(
    int version, std::shared_ptr<frugal::parquet_plugin::Input> input) {
  if (version != frugal::parquet_plugin::kVersion)
    throw std::runtime_error("a parquet plugin of version " + std::to_string(frugal::parquet_plugin::kVersion) +
                             " asked for version " + std::to_string(version));
  try {
    return new frugal::parquet_plugin::ArrowFile(std::move(input));
  } catch (const parquet::ParquetException& e) {
    throw std::runtime_error(e.what());
  }
}
