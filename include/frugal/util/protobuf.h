// A small protobuf wire-format encoder (https://protobuf.dev/programming-guides/encoding/).
//
// Enough to write ONNX ModelProto and TensorBoard Event records without linking libprotobuf
// (LibTorch carries its own protobuf whose headers clash with the system's). Encoding only:
// frugal never reads these formats back. Fields are written in call order; protobuf readers
// accept any order, but callers should follow field-number order so dumps diff cleanly.
//
//   pb::Writer tensor;
//   tensor.packed_int64(1, dims);          // repeated int64 dims = 1 [packed]
//   tensor.int32(2, 1);                    // data_type = FLOAT
//   tensor.string(8, "conv1.weight");      // name
//   tensor.bytes(9, raw);                  // raw_data
//   graph.message(5, tensor);              // repeated TensorProto initializer = 5
//
// Integers: int32/int64/uint64/bool/enum all travel as varints; negative int32/int64 take ten
// bytes (two's complement, as the spec requires). sint32/sint64 (zigzag) are not supported.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace frugal::pb {

enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

// Low-level helpers, exposed for tests and for callers that build records by hand.
void append_varint(std::string& out, std::uint64_t value);
void append_tag(std::string& out, std::uint32_t field, WireType type);
void append_fixed32(std::string& out, std::uint32_t value);  // little-endian
void append_fixed64(std::string& out, std::uint64_t value);  // little-endian

class Writer {
 public:
  // Scalars (wire type 0). Proto3 callers may skip default values; this writer never does.
  void uint64(std::uint32_t field, std::uint64_t value);
  void int64(std::uint32_t field, std::int64_t value);
  void int32(std::uint32_t field, std::int32_t value);  // also for enums
  void boolean(std::uint32_t field, bool value);

  // Fixed-width (wire types 5 and 1).
  void fixed32(std::uint32_t field, std::uint32_t value);
  void fixed64(std::uint32_t field, std::uint64_t value);
  void float32(std::uint32_t field, float value);
  void float64(std::uint32_t field, double value);

  // Length-delimited (wire type 2).
  void bytes(std::uint32_t field, std::string_view value);
  void string(std::uint32_t field, std::string_view value) { bytes(field, value); }
  void message(std::uint32_t field, const Writer& nested) { bytes(field, nested.data()); }

  // Packed repeated fields: one length-delimited record holding all values. Writes nothing for
  // an empty span (an empty packed field and an absent one decode alike).
  void packed_int64(std::uint32_t field, std::span<const std::int64_t> values);
  void packed_uint64(std::uint32_t field, std::span<const std::uint64_t> values);
  void packed_float32(std::uint32_t field, std::span<const float> values);
  void packed_float64(std::uint32_t field, std::span<const double> values);

  const std::string& data() const { return buf_; }
  std::size_t size() const { return buf_.size(); }
  std::string take() { return std::move(buf_); }

 private:
  std::string buf_;
};

}  // namespace frugal::pb
