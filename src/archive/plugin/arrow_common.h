// What the Arrow plugin's two readers share (arrow_parquet.cpp: parquet; arrow_ipc.cpp: Arrow IPC
// streams and files): frugal's bytes as Arrow's file, Arrow's memory capped per read, the image
// column's bytes. Included by the plugin's sources only.
#pragma once

#include <arrow/api.h>
#include <arrow/io/interfaces.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's spelling
#define FRUGAL_ASAN 1
#endif
#endif

#include "archive/parquet_plugin.h"

namespace frugal::parquet_plugin {

// Input as Arrow's file (or the window [base, base + size) of it: an IPC message's body, offsets
// counted from its start): positioned reads from any thread, zero-copy where the bytes are mapped
// (the input outlives every buffer: the File holds it, the reader holds the File).
class InputFile final : public arrow::io::RandomAccessFile {
 public:
  InputFile(std::shared_ptr<Input> in, arrow::MemoryPool* pool, std::int64_t base = 0, std::int64_t size = -1)
      : in_(std::move(in)), pool_(pool), base_(base), size_(size < 0 ? in_->size() - base : size) {}
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
      if (std::string why = in_->read_at(base_ + position, n, out); !why.empty()) return arrow::Status::IOError(why);
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(std::int64_t position, std::int64_t nbytes) override {
    if (position < 0 || nbytes < 0 || position > size_) return arrow::Status::IOError("read outside the file");
    const std::int64_t n = std::min(nbytes, size_ - position);
    if (const std::uint8_t* v = in_->view(base_ + position, n)) return std::make_shared<arrow::Buffer>(v, n);
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> buf, arrow::AllocateBuffer(n, pool_));
    ARROW_ASSIGN_OR_RAISE(std::int64_t got, ReadAt(position, n, buf->mutable_data()));
    (void)got;
    return buf;
  }

 private:
  std::shared_ptr<Input> in_;
  arrow::MemoryPool* pool_;  // the File's (or the read's): buffers read here may outlive one read
  std::int64_t base_, size_, pos_ = 0;
  bool closed_ = false;
};

// Arrow's memory for one read, capped: a file of 1.4 kB made Arrow's reader allocate 20 GB for its
// declared page sizes (pyarrow's read_table too). A read that would hold more than kMaxReadBytes is
// refused instead. The memory is pyarrow's jemalloc pool (it keeps freed pages a while: a row
// group's fresh pages from the system allocator made opening the photo set 2.4x slower), except
// under AddressSanitizer (the fuzz build), where the system allocator's lets it see frugal's reads.
inline constexpr std::int64_t kMaxReadBytes = std::int64_t{1} << 30;

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
    return arrow::Status::OutOfMemory(
        "a read of " + std::to_string(size) +
        " bytes more than the 1 GiB one row group may take (one record batch, in an Arrow " +
        "file): the file declares sizes it does not hold, or they are very large");
  }
#if defined(__SANITIZE_ADDRESS__) || defined(FRUGAL_ASAN)
  arrow::MemoryPool* base_ = arrow::system_memory_pool();
#else
  arrow::MemoryPool* base_ = arrow::default_memory_pool();
#endif
  std::atomic<std::int64_t> used_{0};
  std::atomic<bool> refused_any_{false};
};

inline void check(const arrow::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

template <class T>
T value(arrow::Result<T> r) {
  check(r.status());
  return std::move(r).ValueUnsafe();
}

inline bool binary_type(const arrow::DataType& t) {
  return t.id() == arrow::Type::BINARY || t.id() == arrow::Type::LARGE_BINARY;
}

inline std::optional<int> bytes_child(const arrow::DataType& t) {
  if (t.id() != arrow::Type::STRUCT) return std::nullopt;
  for (int k = 0; k < t.num_fields(); ++k)
    if (t.field(k)->name() == "bytes" && binary_type(*t.field(k)->type())) return k;
  return std::nullopt;
}

// A schema's fields as the seam describes them, and its key-value metadata ("" when absent): the
// same for a parquet file and an Arrow IPC one.
inline std::vector<Field> fields_of(const arrow::Schema& schema) {
  std::vector<Field> out;
  for (int k = 0; k < schema.num_fields(); ++k) {
    const auto& f = *schema.field(k);
    out.push_back(
        {f.name(), f.type()->ToString(), bytes_child(*f.type()).has_value(), arrow::is_integer(f.type()->id())});
  }
  return out;
}

inline std::string schema_metadata(const arrow::Schema& schema, const std::string& key) {
  const auto md = schema.metadata();
  if (!md) return "";
  const int k = md->FindKey(key);
  return k < 0 ? "" : md->value(k);
}

inline std::optional<std::int64_t> integer_at(const arrow::Array& a, std::int64_t i) {
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

}  // namespace frugal::parquet_plugin
