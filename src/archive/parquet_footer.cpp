// The parquet footer walked before Arrow parses it (parquet_footer.h says why).
#include "archive/parquet_footer.h"

#include <string>

#include "archive/parquet_plugin.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

namespace pp = parquet_plugin;

// Thrift's compact types (as field and element types).
enum : std::uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
  kUuid = 13  // Thrift 0.19's, 16 bytes: skipped as Arrow's reader skips a field it does not know
};
constexpr int kMaxDepth = 64;  // Thrift's own recursion limit (TConfiguration's default)

// Where a value lies, as far as the census needs: the row groups and their column chunks.
enum class Role { other, file, row_groups, row_group, columns };

class Walk {
 public:
  explicit Walk(std::string_view bytes)
      : p_(reinterpret_cast<const std::uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  // False with why() set when the bytes are malformed or over the limits (census().memory tells).
  bool run() {
    count(pp::kFooterStructBytes);
    return structure(0, Role::file);
  }
  const ParquetFooterCensus& census() const { return census_; }
  const std::string& why() const { return why_; }

 private:
  bool fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
  }
  std::uint64_t left() const { return static_cast<std::uint64_t>(end_ - p_); }
  bool count(std::uint64_t bytes) {
    census_.memory += bytes;
    return census_.memory <= pp::kMaxFooterMemory ||
           fail("more than " + format_size(pp::kMaxFooterMemory) + " to parse");
  }
  bool byte(std::uint8_t& b) {
    if (p_ == end_) return fail("its Thrift bytes end inside a value");
    b = *p_++;
    return true;
  }
  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      std::uint8_t b = 0;
      if (!byte(b)) return false;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return fail("a Thrift integer of more than 10 bytes");
  }
  bool skip(std::uint64_t n) {
    if (n > left()) return fail("its Thrift bytes end inside a value");
    p_ += n;
    return true;
  }

  bool value(std::uint8_t type, int depth, Role role) {
    std::uint64_t v = 0;
    switch (type) {
      case kTrue:
      case kFalse:  // in a list only: a field's boolean is its header
      case kByte:
        return skip(1);
      case kI16:
      case kI32:
      case kI64:
        return varint(v);
      case kDouble:
        return skip(8);
      case kUuid:
        return skip(16);
      case kBinary:
        if (!varint(v)) return false;
        if (v > static_cast<std::uint64_t>(pp::kThriftStringLimit))
          return fail("a string of " + std::to_string(v) + " bytes");
        return skip(v) && count(v);
      case kList:
      case kSet:
        return list(depth, role);
      case kMap:
        return map(depth);
      case kStruct:
        return structure(depth, role);
      default:
        return fail("a Thrift value of type " + std::to_string(type));
    }
  }

  bool structure(int depth, Role role) {
    if (depth >= kMaxDepth) return fail("Thrift structs nested deeper than " + std::to_string(kMaxDepth));
    std::int64_t id = 0;
    for (;;) {
      std::uint8_t header = 0;
      if (!byte(header)) return false;
      if (header == kStop) return true;
      const std::uint8_t type = header & 0x0f;
      if (header >> 4) {
        id += header >> 4;
      } else {
        std::uint64_t z = 0;
        if (!varint(z)) return false;
        id = static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
      }
      if (type == kTrue || type == kFalse) continue;  // the value is the type
      Role child = Role::other;
      if (role == Role::file && id == 4 && type == kList) child = Role::row_groups;
      if (role == Role::row_group && id == 1 && type == kList) child = Role::columns;
      if (!value(type, depth + 1, child)) return false;
    }
  }

  // A list or set: its count fits in the bytes left (an element takes one at least) and what
  // Thrift allocates for that count up front is counted before its elements are walked.
  bool list(int depth, Role role) {
    std::uint8_t header = 0;
    if (!byte(header)) return false;
    std::uint64_t n = header >> 4;
    if (n == 15 && !varint(n)) return false;
    const std::uint8_t type = header & 0x0f;
    if (n == 0) return true;  // of any element type, as Thrift reads it
    if (n > left()) return fail("a list of " + std::to_string(n) + " elements in " + std::to_string(left()) + " bytes");
    if (n > static_cast<std::uint64_t>(pp::kThriftContainerLimit))
      return fail("a list of " + std::to_string(n) + " elements");
    if (role == Role::row_groups) census_.row_groups += n;
    if (role == Role::columns) census_.column_chunks += n;
    // Counted as structs whatever the header says: Thrift's generated code reads a known field's
    // elements as its schema types them, after allocating them, and ignores the header's type.
    if (!count(n * pp::kFooterStructBytes)) return false;
    const Role element = role == Role::row_groups ? Role::row_group : Role::other;
    for (std::uint64_t i = 0; i < n; ++i)
      if (!value(type, depth + 1, element)) return false;
    return true;
  }

  bool map(int depth) {
    std::uint64_t n = 0;
    if (!varint(n)) return false;
    if (n == 0) return true;
    std::uint8_t types = 0;
    if (!byte(types)) return false;
    if (n > left() / 2 || n > static_cast<std::uint64_t>(pp::kThriftContainerLimit))
      return fail("a map of " + std::to_string(n) + " entries in " + std::to_string(left()) + " bytes");
    if (!count(n * 2 * pp::kFooterStructBytes)) return false;
    for (std::uint64_t i = 0; i < n; ++i)
      if (!value(types >> 4, depth + 1, Role::other) || !value(types & 0x0f, depth + 1, Role::other)) return false;
    return true;
  }

  const std::uint8_t* p_;
  const std::uint8_t* end_;
  ParquetFooterCensus census_;
  std::string why_;
};

std::uint32_t le32(const unsigned char* b) {
  return static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
         static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
}

}  // namespace

std::optional<ParquetFooterCensus> walk_parquet_footer(std::string_view thrift, std::string& why) {
  Walk walk(thrift);
  ParquetFooterCensus c;
  if (!walk.run()) {
    why = walk.why();
    if (walk.census().memory <= pp::kMaxFooterMemory) return std::nullopt;
    c = walk.census();  // over the memory limit: the census so far says how far
  } else {
    c = walk.census();
  }
  c.footer_bytes = thrift.size();
  return c;
}

ParquetFooterCensus check_parquet_footer(const ByteSource& src, const std::string& display) {
  const std::string expected = "a parquet file (its footer, then its length and \"PAR1\", at the end)";
  const std::uint64_t size = src.size();
  if (size < 12) fail(ErrorKind::invalid, display, expected, std::to_string(size) + " bytes", "");
  unsigned char tail[8];
  src.read_at(size - 8, tail, 8);
  const std::string magic(reinterpret_cast<const char*>(tail + 4), 4);
  if (magic == "PARE")
    fail(ErrorKind::unsupported, display, expected, "an encrypted parquet file (its footer ends \"PARE\")",
         "decrypt it first (pyarrow.parquet.read_table with its keys, then write_table)");
  if (magic != "PAR1") fail(ErrorKind::invalid, display, expected, "no \"PAR1\" at its end", "");
  const std::uint64_t len = le32(tail);
  if (len > size - 12)
    fail(ErrorKind::invalid, display, expected,
         "a footer of " + std::to_string(len) + " bytes declared in a file of " + std::to_string(size), "");
  if (len > static_cast<std::uint64_t>(pp::kMaxFooterBytes))
    fail(ErrorKind::budget, display, "a parquet footer of at most " + format_size(pp::kMaxFooterBytes),
         "one of " + format_size(len),
         "rewrite it with fewer, larger row groups or fewer columns (pyarrow.parquet.write_table)");
  std::string thrift(len, '\0');
  src.read_at(size - 8 - len, thrift.data(), len);
  std::string why;
  const auto census = walk_parquet_footer(thrift, why);
  if (!census) fail(ErrorKind::invalid, display, expected, "a footer that is no parquet metadata (" + why + ")", "");
  if (census->memory > pp::kMaxFooterMemory)
    fail(ErrorKind::budget, display,
         "a parquet footer that takes at most " + format_size(pp::kMaxFooterMemory) + " to read",
         "one of " + format_size(len) + " declaring " + std::to_string(census->row_groups) + " row groups of " +
             std::to_string(census->column_chunks) + " column chunks or more, which would take more (" + why + ")",
         "rewrite it with fewer, larger row groups or fewer columns (pyarrow.parquet.write_table)");
  return *census;
}

}  // namespace frugal
