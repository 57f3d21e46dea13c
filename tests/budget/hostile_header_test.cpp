// Crafted safetensors headers and delta metadata, read without LibTorch: every one is Error(invalid)
// or Error(unsupported) naming the file, never a wrapped offset, a huge allocation or a path out of
// the run folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <limits>

#include "budget/fault_env.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/checkpoint_files.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::TempDir;

std::string file_with_header(const nlohmann::json& header, const std::string& payload) {
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + payload;
}

std::optional<ErrorKind> header_error(const std::string& bytes) {
  try {
    parse_safetensors_header(bytes.data(), bytes.size(), "crafted.safetensors");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("crafted.safetensors"), std::string::npos) << e.what();
    return e.kind();
  }
  return std::nullopt;
}

TEST(HostileSafetensorsHeader, EndOffsetThatWrapsPastTheFileIsRefused) {
  // payload_offset + end wraps around 2^64 to a small number that passed the old bound check; the
  // shape agrees with the offsets, so only the bound check stands between this and a read past
  // the end of the file.
  const std::uint64_t end = std::numeric_limits<std::uint64_t>::max() - 15;
  std::string bytes =
      file_with_header({{"w", {{"dtype", "U8"}, {"shape", {end}}, {"data_offsets", {0, end}}}}}, std::string(64, 'p'));
  EXPECT_EQ(header_error(bytes), ErrorKind::invalid);
  // The same through the file reader (du, clean, resume use it).
  TempDir dir;
  write_file_atomic(dir / "w.safetensors", bytes);
  EXPECT_THROW(read_safetensors_header(dir / "w.safetensors"), Error);
  EXPECT_NE(verify_checkpoint_file(dir / "w.safetensors"), "");
}

TEST(HostileSafetensorsHeader, ShapeWhoseByteCountOverflowsIsRefused) {
  const std::uint64_t big = 1ull << 32;
  std::string bytes =
      file_with_header({{"w", {{"dtype", "F32"}, {"shape", {big, big, 2}}, {"data_offsets", {0, 0}}}}}, "");
  EXPECT_EQ(header_error(bytes), ErrorKind::invalid);
}

TEST(HostileSafetensorsHeader, ShapeThatDisagreesWithTheOffsetsIsRefused) {
  // 1,000,000 F32 elements claimed over 16 bytes: a loader trusting the shape allocates 4 MB
  // (or terabytes) for a file of a few bytes.
  std::string bytes = file_with_header({{"w", {{"dtype", "F32"}, {"shape", {1000000}}, {"data_offsets", {0, 16}}}}},
                                       std::string(16, 0));
  EXPECT_EQ(header_error(bytes), ErrorKind::invalid);
  std::string ok =
      file_with_header({{"w", {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}}}, std::string(16, 0));
  EXPECT_EQ(header_error(ok), std::nullopt);
}

TEST(HostileSafetensorsHeader, HeaderLengthsNearTheTopOfTheRangeAreRefused) {
  for (std::uint64_t n : {std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max() - 7,
                          std::uint64_t{1} << 63, std::uint64_t{200} << 20}) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    bytes += "{}";
    EXPECT_EQ(header_error(bytes), ErrorKind::invalid) << n;
  }
}

TEST(HostileSafetensorsHeader, TypeConfusionInTheJsonIsInvalidInputNotAnInternalError) {
  for (const char* json :
       {R"({"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 1]}})",
        R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})",
        R"({"w": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 1]}})",
        R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 0]}})", R"({"__metadata__": {"k": 1}})",
        R"({"__metadata__": []})", R"([1, 2])", R"("x")", R"({"w": []})"}) {
    std::string j = json;
    j.append((8 - j.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((j.size() >> (8 * i)) & 0xff);
    bytes += j + "p";
    EXPECT_EQ(header_error(bytes), ErrorKind::invalid) << json;
  }
}

TEST(HostileSafetensorsHeader, DeeplyNestedJsonIsRefusedBeforeAnythingRecursesOverIt) {
  // A million levels: parsed iteratively, but copied or dumped (for a message) recursively.
  const std::size_t depth = 1000000;
  std::string j = "{\"w\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  j.append((8 - j.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((j.size() >> (8 * i)) & 0xff);
  EXPECT_EQ(header_error(bytes + j), ErrorKind::invalid);
  EXPECT_THROW(parse_delta_index("[" + std::string(depth, '[') + std::string(depth, ']') + "]", "d.safetensors"),
               Error);
}

TEST(DeltaIndex, ParsesWhatTheWriterWritesWithCheckedByteCounts) {
  auto items = parse_delta_index(R"([["fc.weight","F32",[3,32],"xor"],["frugal.rng.cpu","U8",[64],"raw"],)"
                                 R"(["n","I64",[],"same"]])",
                                 "d.safetensors");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].bytes, 3u * 32 * 4);
  EXPECT_EQ(items[0].shape, (std::vector<std::int64_t>{3, 32}));
  EXPECT_EQ(items[1].bytes, 64u);
  EXPECT_EQ(items[2].bytes, 8u);  // a 0-d tensor holds one element
  EXPECT_EQ(items[2].mode, "same");
}

TEST(DeltaIndex, CraftedIndexesAreRefused) {
  const std::pair<const char*, ErrorKind> cases[] = {
      {"not json", ErrorKind::invalid},
      {R"({"a": 1})", ErrorKind::invalid},
      {R"([["w","F32",[4294967296,4294967296],"raw"]])", ErrorKind::invalid},   // bytes overflow
      {R"([["w","F32",[9223372036854775808, 0],"raw"]])", ErrorKind::invalid},  // dimension past int64
      {R"([["w","F32",[-1],"raw"]])", ErrorKind::invalid},
      {R"([["w","F32",[1],"zap"]])", ErrorKind::invalid},
      {R"([["w","F32",[1],"raw"],["w","F32",[1],"raw"]])", ErrorKind::invalid},
      {R"([["w","Q4",[1],"raw"]])", ErrorKind::unsupported},
      {R"([["w","F32",[1]]])", ErrorKind::invalid},
      {R"([[1,"F32",[1],"raw"]])", ErrorKind::invalid},
      {R"([5])", ErrorKind::invalid},
  };
  for (const auto& [text, kind] : cases) {
    try {
      parse_delta_index(text, "d.safetensors");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << text << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("d.safetensors"), std::string::npos) << e.what();
    }
  }
}

TEST(DeltaBase, OnlyAnotherFileInTheSameFolderIsABase) {
  TempDir dir;
  fs::create_directories(dir / "run");
  const fs::path delta = dir / "run/ckpt-e0001-s000020.delta.safetensors";
  EXPECT_EQ(delta_base_path(delta, "ckpt-e0001-s000010.safetensors"), dir / "run/ckpt-e0001-s000010.safetensors");
  for (const char* bad : {"ckpt-e0001-s000020.delta.safetensors", "./ckpt-e0001-s000020.delta.safetensors",
                          "../outside.safetensors", "/etc/passwd", "sub/ckpt.safetensors", "", ".", "a\\b"}) {
    try {
      delta_base_path(delta, bad);
      ADD_FAILURE() << "accepted base " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid) << bad;
    }
  }
  // A name in the folder that is a link out of it is refused too.
  fs::create_symlink("/etc/hostname", dir / "run/link.safetensors");
  EXPECT_THROW(delta_base_path(delta, "link.safetensors"), Error);
}

}  // namespace
}  // namespace frugal
