// libfrugal_arrow_parquet.so: parquet files read through Apache Arrow's C++ library (pyarrow's),
// behind the seam of archive/parquet_plugin.h. Nothing of frugal's is linked in: errors leave as
// std::runtime_error with the text the reader shows.
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include "archive/plugin/arrow_common.h"

namespace frugal::parquet_plugin {
namespace {

// Arrow's reader properties: `pool`, and Thrift's limits for footers and page headers
// (parquet_plugin.h; frugal has walked the footer against the same before it is opened).
parquet::ReaderProperties properties(arrow::MemoryPool* pool) {
  parquet::ReaderProperties props(pool);
  props.set_thrift_string_size_limit(kThriftStringLimit);
  props.set_thrift_container_size_limit(kThriftContainerLimit);
  return props;
}
class ArrowFile final : public File {
 public:
  explicit ArrowFile(std::shared_ptr<Input> in) : input_(std::make_shared<InputFile>(std::move(in), &open_pool_)) {
    try {
      meta_ = parquet::ParquetFileReader::Open(input_, properties(&open_pool_))->metadata();
      check(reader(&open_pool_)->GetSchema(&schema_));
    } catch (const parquet::ParquetException& e) {
      throw std::runtime_error(e.what());
    }
    fields_ = fields_of(*schema_);
  }

  const std::vector<Field>& fields() const override { return fields_; }
  std::string metadata(const std::string& key) const override { return schema_metadata(*schema_, key); }
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
