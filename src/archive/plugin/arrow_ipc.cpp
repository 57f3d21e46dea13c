// libfrugal_arrow_parquet.so's second reader: Apache Arrow IPC, the `.arrow` files of Hugging Face
// datasets' save_to_disk (the streaming format) and Arrow's file format (ARROW1), behind the same
// seam as parquet (archive/parquet_plugin.h: a record batch is what a row group is there). One
// plugin, not two: both need the same libarrow, InputFile and capped pool (arrow_common.h), and the
// archive library then loads one library for Hugging Face data of either kind.
//
// The file is walked message by message before Arrow reads a body: each message's prefix, its
// metadata's length (at most kMaxMetadataBytes) and its declared body are checked against the
// file's size, the metadata is verified by Arrow's flatbuffer verifier (Message::Open, then
// Message::Verify() again), and record batches are counted (at most kMaxBatches). A batch's body is
// read only when its images are (one batch at a time, within CappedPool's 1 GiB), and the columns
// read are validated in full (offsets within their data) before a byte of them is used.
#include <arrow/ipc/api.h>

#include <cstring>

#include "archive/plugin/arrow_common.h"

namespace frugal::parquet_plugin {
namespace {

// One message's flatbuffer: a schema with Hugging Face's metadata takes kilobytes (ImageNet-21k's
// 21,841 class names: 0.7 MB); a record batch's a few hundred bytes.
constexpr std::int64_t kMaxMetadataBytes = kMaxFooterBytes;
// Record batches in one file: datasets writes 1,000 rows (100 images) a batch; a million batches
// hold a hundred million images and take 48 MB of frugal's index.
constexpr std::size_t kMaxBatches = std::size_t{1} << 20;
// Rows in one file: what the archive indexes at most (parquet_archive.cpp's kMaxRows).
constexpr std::int64_t kMaxRows = std::int64_t{1} << 31;

struct Block {
  std::int64_t metadata_offset = 0, metadata_length = 0, body_offset = 0, body_length = 0, rows = 0;
};

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

// RecordBatch.length (its field 0) from the header table Arrow verified; every read bounded by the
// metadata all the same.
std::int64_t batch_rows(const arrow::ipc::Message& m) {
  const auto* begin = m.metadata()->data();
  const auto* end = begin + m.metadata()->size();
  const auto* table = static_cast<const std::uint8_t*>(m.header());
  if (!table || table < begin || table + 4 > end) throw std::runtime_error("a record batch without its header");
  const std::int64_t soffset = static_cast<std::int32_t>(le32(table));
  const std::int64_t vt = (table - begin) - soffset;
  if (vt < 0 || vt + 4 > end - begin) throw std::runtime_error("a record batch header outside its message");
  const std::uint8_t* v = begin + vt;
  const unsigned vsize = v[0] | v[1] << 8;
  if (vsize < 6 || vt + vsize > end - begin) return 0;  // no length field: 0 rows (flatbuffers' default)
  const unsigned off = v[4] | v[5] << 8;
  if (off == 0) return 0;
  if (table + off + 8 > end) throw std::runtime_error("a record batch length outside its message");
  std::int64_t rows = 0;
  std::memcpy(&rows, table + off, 8);
  if (rows < 0) throw std::runtime_error("a record batch of " + std::to_string(rows) + " rows");
  return rows;
}

class IpcFile final : public File {
 public:
  explicit IpcFile(std::shared_ptr<Input> in) : in_(std::move(in)), size_(in_->size()) {
    walk();
    fields_ = fields_of(*schema_);
  }

  const std::vector<Field>& fields() const override { return fields_; }
  std::string metadata(const std::string& key) const override { return schema_metadata(*schema_, key); }
  std::int64_t rows() const override { return rows_; }
  int row_groups() const override { return static_cast<int>(blocks_.size()); }
  std::int64_t row_group_rows(int group) const override { return blocks_.at(static_cast<std::size_t>(group)).rows; }
  // The whole body of the batch (every column's buffers), as its message declares it.
  std::uint64_t image_bytes_declared(int group, int field) const override {
    (void)field;
    return static_cast<std::uint64_t>(blocks_.at(static_cast<std::size_t>(group)).body_length);
  }

  std::vector<std::optional<std::int64_t>> integers(int field) const override {
    CappedPool pool;
    std::vector<std::optional<std::int64_t>> out;  // grown by the rows read, not by what headers declare
    for (std::size_t g = 0; g < blocks_.size(); ++g) {
      const auto column = read_column(g, field, &pool);
      check(column->ValidateFull());
      for (std::int64_t i = 0; i < column->length(); ++i) out.push_back(integer_at(*column, i));
    }
    return out;
  }

  std::shared_ptr<const ImageColumn> images(int group, int field) const override {
    auto pool = std::make_shared<CappedPool>();
    try {
      const auto column = read_column(static_cast<std::size_t>(group), field, pool.get());
      if (column->type_id() != arrow::Type::STRUCT) throw std::runtime_error("an image column that is no struct");
      const auto& st = static_cast<const arrow::StructArray&>(*column);
      const auto child = bytes_child(*st.type());
      if (!child) throw std::runtime_error("an image column without bytes");
      auto bytes = value(st.GetFlattenedField(*child, pool.get()));
      check(bytes->ValidateFull());  // every offset within the data: what Images::bytes() trusts
      return std::make_shared<Images>(pool, std::move(bytes));
    } catch (const std::exception& e) {
      const std::int64_t body = blocks_.at(static_cast<std::size_t>(group)).body_length;
      if (pool->refused_any() && body >= kMaxReadBytes / 4)
        throw std::length_error("record batch " + std::to_string(group) + " of " + std::to_string(body >> 20) +
                                " MiB, which Arrow holds at once with its copy: more than the 1 GiB one read may take");
      throw;
    }
  }

 private:
  [[noreturn]] void bad(std::int64_t at, const std::string& what) const {
    throw std::runtime_error("at byte " + std::to_string(at) + " of " + std::to_string(size_) + ": " + what);
  }

  // The metadata of a message, copied into memory of `pool` (flatbuffers want it aligned).
  std::shared_ptr<arrow::Buffer> read_metadata(std::int64_t offset, std::int64_t length,
                                               arrow::MemoryPool* pool) const {
    std::shared_ptr<arrow::Buffer> buf = value(arrow::AllocateBuffer(length, pool));
    if (std::string why = in_->read_at(offset, length, buf->mutable_data()); !why.empty())
      throw std::runtime_error(why);
    return buf;
  }

  // Message i's prefix at `pos`: its metadata's offset and length (0 for the end-of-stream marker).
  std::pair<std::int64_t, std::int64_t> prefix(std::int64_t pos) const {
    std::uint8_t b[8];
    if (pos + 4 > size_) bad(pos, "the file ends inside a message's prefix (it was cut short)");
    if (std::string why = in_->read_at(pos, 4, b); !why.empty()) throw std::runtime_error(why);
    std::int64_t at = pos + 4;
    std::uint32_t length = le32(b);
    if (length == 0xFFFFFFFFu) {  // the continuation marker, then the length
      if (pos + 8 > size_) bad(pos, "the file ends inside a message's prefix (it was cut short)");
      if (std::string why = in_->read_at(pos + 4, 4, b + 4); !why.empty()) throw std::runtime_error(why);
      length = le32(b + 4);
      at = pos + 8;
    }
    if (static_cast<std::int32_t>(length) < 0 || length > kMaxMetadataBytes)
      bad(pos, "a message whose metadata declares " + std::to_string(static_cast<std::int32_t>(length)) +
                   " bytes (at most " + std::to_string(kMaxMetadataBytes >> 20) + " MiB are read)");
    if (at + length > size_)
      bad(pos, "a message of " + std::to_string(length) + " bytes of metadata where " + std::to_string(size_ - at) +
                   " remain (the file was cut short)");
    return {at, length};
  }

  // The messages from the start (after ARROW1's 8 bytes) to the end-of-stream marker or the end.
  void walk() {
    std::int64_t pos = 0;
    std::uint8_t magic[8] = {};
    if (size_ >= 8 && in_->read_at(0, 8, magic).empty() && std::memcmp(magic, "ARROW1\0\0", 8) == 0) pos = 8;
    while (pos < size_ || !schema_) {
      const auto [at, length] = prefix(pos);
      if (length == 0) break;  // end of stream (a file's footer follows it)
      auto metadata = read_metadata(at, length, &open_pool_);
      auto message = value(arrow::ipc::Message::Open(metadata, nullptr));
      if (!message->Verify()) bad(pos, "a message whose metadata fails Arrow's flatbuffer verifier");
      const std::int64_t body = message->body_length();
      if (body < 0 || body > size_ - (at + length))
        bad(pos, "a message declaring a body of " + std::to_string(body) + " bytes where " +
                     std::to_string(size_ - (at + length)) + " remain (the file was cut short)");
      take(*message, pos, Block{at, length, at + length, body, 0});
      pos = at + length + body;
    }
    if (!schema_) bad(pos, "no schema message");
  }

  void take(const arrow::ipc::Message& message, std::int64_t pos, Block block) {
    using arrow::ipc::MessageType;
    if (message.type() == MessageType::SCHEMA) {
      if (schema_) bad(pos, "a second schema message");
      schema_ = value(arrow::ipc::ReadSchema(message, &memo_));
    } else if (message.type() == MessageType::RECORD_BATCH) {
      if (!schema_) bad(pos, "a record batch before the schema");
      if (blocks_.size() >= kMaxBatches)
        bad(pos, "more than " + std::to_string(kMaxBatches) + " record batches (frugal reads at most that many)");
      block.rows = batch_rows(message);
      // An image column's binary offsets take 4 bytes a row at least: a header declaring more rows
      // than that (a billion rows in a few bytes) is refused before anything is sized by it.
      if (block.rows > block.body_length / 4)
        bad(pos, "a record batch of " + std::to_string(block.rows) + " rows in a body of " +
                     std::to_string(block.body_length) + " bytes (an image column takes 4 bytes a row at least)");
      if (block.rows > kMaxRows - rows_)
        bad(pos, "more than " + std::to_string(kMaxRows) + " rows (frugal reads at most that many a file)");
      rows_ += block.rows;
      blocks_.push_back(block);
    } else if (message.type() == MessageType::DICTIONARY_BATCH) {
      bad(pos, "a dictionary batch: dictionary-encoded columns, which frugal does not read (datasets writes none)");
    } else {
      bad(pos, "a message of type " + arrow::ipc::FormatMessageType(message.type()));
    }
  }

  // Column `field` of batch g, read alone (its buffers only) with memory of `pool`; its structure
  // validated against the batch.
  std::shared_ptr<arrow::Array> read_column(std::size_t g, int field, arrow::MemoryPool* pool) const {
    const Block& b = blocks_.at(g);
    if (field < 0 || field >= schema_->num_fields()) throw std::runtime_error("no column " + std::to_string(field));
    const auto metadata = read_metadata(b.metadata_offset, b.metadata_length, pool);
    InputFile body(in_, pool, b.body_offset, b.body_length);
    arrow::ipc::IpcReadOptions options;
    options.memory_pool = pool;
    options.use_threads = false;
    options.included_fields = {field};
    // A buffer at an offset its type cannot be read at (a crafted file; writers align to 8) is
    // copied to aligned memory of `pool`; aligned ones stay zero-copy.
    options.ensure_alignment = arrow::ipc::Alignment::kDataTypeSpecificAlignment;
    const auto batch = value(arrow::ipc::ReadRecordBatch(*metadata, schema_, &memo_, options, &body));
    if (batch->num_rows() != b.rows || batch->num_columns() != 1)
      throw std::runtime_error("record batch " + std::to_string(g) + " read as " + std::to_string(batch->num_rows()) +
                               " rows where its header says " + std::to_string(b.rows));
    check(batch->Validate());
    return batch->column(0);
  }

  CappedPool open_pool_;  // the walk's reads (first: it outlives what was read with it)
  std::shared_ptr<Input> in_;
  std::int64_t size_;
  std::shared_ptr<arrow::Schema> schema_;
  arrow::ipc::DictionaryMemo memo_;
  std::vector<Block> blocks_;
  std::int64_t rows_ = 0;
  std::vector<Field> fields_;
};

}  // namespace
}  // namespace frugal::parquet_plugin

extern "C" __attribute__((visibility("default"))) frugal::parquet_plugin::File* frugal_arrow_ipc_open(
    int version, std::shared_ptr<frugal::parquet_plugin::Input> input) {
  if (version != frugal::parquet_plugin::kVersion)
    throw std::runtime_error("an Arrow plugin of version " + std::to_string(frugal::parquet_plugin::kVersion) +
                             " asked for version " + std::to_string(version));
  return new frugal::parquet_plugin::IpcFile(std::move(input));
}
