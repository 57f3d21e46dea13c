#include "frugal/util/protobuf.h"

#include <bit>
#include <cstring>

namespace frugal::pb {

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void append_tag(std::string& out, std::uint32_t field, WireType type) {
  append_varint(out, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint8_t>(type));
}

void append_fixed32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void append_fixed64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void Writer::uint64(std::uint32_t field, std::uint64_t value) {
  append_tag(buf_, field, WireType::varint);
  append_varint(buf_, value);
}

// Negative values are sign-extended to 64 bits, so they always take ten bytes.
void Writer::int64(std::uint32_t field, std::int64_t value) { uint64(field, static_cast<std::uint64_t>(value)); }

void Writer::int32(std::uint32_t field, std::int32_t value) {
  uint64(field, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
}

void Writer::boolean(std::uint32_t field, bool value) { uint64(field, value ? 1 : 0); }

void Writer::fixed32(std::uint32_t field, std::uint32_t value) {
  append_tag(buf_, field, WireType::fixed32);
  append_fixed32(buf_, value);
}

void Writer::fixed64(std::uint32_t field, std::uint64_t value) {
  append_tag(buf_, field, WireType::fixed64);
  append_fixed64(buf_, value);
}

void Writer::float32(std::uint32_t field, float value) { fixed32(field, std::bit_cast<std::uint32_t>(value)); }

void Writer::float64(std::uint32_t field, double value) { fixed64(field, std::bit_cast<std::uint64_t>(value)); }

void Writer::bytes(std::uint32_t field, std::string_view value) {
  append_tag(buf_, field, WireType::length_delimited);
  append_varint(buf_, value.size());
  buf_.append(value);
}

namespace {
template <typename T, typename Append>
void packed(std::string& buf, std::uint32_t field, std::span<const T> values, Append append) {
  if (values.empty()) return;
  std::string body;
  for (const T& v : values) append(body, v);
  append_tag(buf, field, WireType::length_delimited);
  append_varint(buf, body.size());
  buf.append(body);
}
}  // namespace

void Writer::packed_int64(std::uint32_t field, std::span<const std::int64_t> values) {
  packed(buf_, field, values, [](std::string& b, std::int64_t v) { append_varint(b, static_cast<std::uint64_t>(v)); });
}

void Writer::packed_uint64(std::uint32_t field, std::span<const std::uint64_t> values) {
  packed(buf_, field, values, [](std::string& b, std::uint64_t v) { append_varint(b, v); });
}

void Writer::packed_float32(std::uint32_t field, std::span<const float> values) {
  packed(buf_, field, values, [](std::string& b, float v) { append_fixed32(b, std::bit_cast<std::uint32_t>(v)); });
}

void Writer::packed_float64(std::uint32_t field, std::span<const double> values) {
  packed(buf_, field, values, [](std::string& b, double v) { append_fixed64(b, std::bit_cast<std::uint64_t>(v)); });
}

}  // namespace frugal::pb
