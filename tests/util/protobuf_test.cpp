#include "frugal/util/protobuf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace frugal;

namespace {
std::string hex(const std::string& s) {
  std::string out;
  char b[4];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}
}  // namespace

// The examples from https://protobuf.dev/programming-guides/encoding/.
TEST(ProtobufWriter, VarintMatchesTheSpecExample) {
  pb::Writer w;
  w.int32(1, 150);
  EXPECT_EQ(hex(w.data()), "089601");
}

TEST(ProtobufWriter, StringMatchesTheSpecExample) {
  pb::Writer w;
  w.string(2, "testing");
  EXPECT_EQ(hex(w.data()), "120774657374696e67");
}

TEST(ProtobufWriter, PackedVarintsMatchTheSpecExample) {
  pb::Writer w;
  std::vector<std::int64_t> v{3, 270, 86942};
  w.packed_int64(4, v);
  EXPECT_EQ(hex(w.data()), "2206038e029ea705");
}

TEST(ProtobufWriter, NestedMessageIsLengthPrefixed) {
  pb::Writer inner;
  inner.int32(1, 150);
  pb::Writer outer;
  outer.message(3, inner);
  EXPECT_EQ(hex(outer.data()), "1a03089601");
}

TEST(ProtobufWriter, NegativeIntsTakeTenBytes) {
  pb::Writer w;
  w.int32(1, -1);
  EXPECT_EQ(hex(w.data()), "08ffffffffffffffffff01");
}

TEST(ProtobufWriter, FixedWidthIsLittleEndian) {
  pb::Writer w;
  w.float32(1, 1.0f);  // 0x3f800000
  w.float64(2, -2.0);  // 0xc000000000000000
  w.fixed32(3, 0x01020304u);
  EXPECT_EQ(hex(w.data()),
            "0d0000803f"
            "1100000000000000c0"
            "1d04030201");
}

TEST(ProtobufWriter, LargeFieldNumbersUseMultiByteTags) {
  pb::Writer w;
  w.boolean(16, true);  // (16 << 3) | 0 = 128 -> two-byte varint
  EXPECT_EQ(hex(w.data()), "800101");
}

TEST(ProtobufWriter, EmptyPackedFieldWritesNothing) {
  pb::Writer w;
  w.packed_float32(1, std::span<const float>{});
  EXPECT_EQ(w.size(), 0u);
}

// An independent decoder: the .venv's onnx package parses a TensorProto built by hand.
TEST(ProtobufWriter, OnnxParsesATensorProto) {
  const std::filesystem::path python = std::filesystem::path(FRUGAL_SOURCE_DIR) / ".venv/bin/python";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no .venv python at " << python;
  if (std::system((python.string() + " -c 'import onnx' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "python package onnx is not installed";

  pb::Writer t;
  std::vector<std::int64_t> dims{2, 3};
  t.packed_int64(1, dims);  // dims
  t.int32(2, 1);            // data_type FLOAT
  t.string(8, "w");         // name
  std::vector<float> vals{1, -2, 3.5f, 0, 1e-3f, -7};
  t.bytes(9, std::string_view(reinterpret_cast<const char*>(vals.data()), vals.size() * 4));

  auto dir = std::filesystem::temp_directory_path() / ("frugal_pb_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.pb", std::ios::binary) << t.data();
  const std::string script =
      "import onnx, onnx.numpy_helper as nh, sys\n"
      "t = onnx.TensorProto(); t.ParseFromString(open(sys.argv[1], 'rb').read())\n"
      "a = nh.to_array(t)\n"
      "assert t.name == 'w', t.name\n"
      "assert a.shape == (2, 3), a.shape\n"
      "assert a.tolist() == [[1, -2, 3.5], [0, a[1][1], -7]], a.tolist()\n"
      "assert abs(a[1][1] - 1e-3) < 1e-9\n";
  std::ofstream(dir / "check.py") << script;
  const int rc =
      std::system((python.string() + " " + (dir / "check.py").string() + " " + (dir / "t.pb").string()).c_str());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0);
}
