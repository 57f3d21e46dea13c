// TensorBoard event files (internal), written without TensorFlow or libprotobuf.
//
// A file is a sequence of TFRecords: u64 length, u32 masked CRC32C of the length bytes, the data,
// u32 masked CRC32C of the data (all little-endian). Each record is an Event protobuf:
//   wall_time double = 1, step int64 = 2, file_version string = 3 ("brain.Event:2", first record),
//   summary Summary = 5 -> repeated Value value = 1 -> {tag string = 1, simple_value float = 2}.
//
// Written through Env::new_appendable_file, one whole record per append: a failed write throws
// (DiskFullError when the disk is full) and leaves the file ending in its last whole record, so
// TensorBoard never meets a torn one. Wall times come from the Env's clock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "frugal/util/env.h"

namespace frugal {

// CRC-32C (Castagnoli), as TFRecord uses it.
std::uint32_t crc32c(std::string_view data);
// TFRecord's masking: rotate right by 15 and add 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view data);
// One TFRecord around `data`.
std::string tf_record(std::string_view data);

class EventWriter {
 public:
  // Creates DIR/events.out.tfevents.<unix time>.<host>.frugal and writes the version record.
  explicit EventWriter(const std::filesystem::path& dir, Env& env = Env::real());
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalar(const std::string& tag, float value, std::int64_t step);
  // Records reach the file as they are written (nothing is buffered here); kept so callers can
  // mark where the events must be out, and a place to add an fsync should that ever be wanted.
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write(const std::string& event);
  double now_seconds() const;
  Env& env_;
  std::filesystem::path path_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace frugal
