// The fast entropy decoder (jpeg_huffman.h) against libjpeg-turbo's own, through the region
// decoder: the same pixels for every kind of JPEG, and the same outcome for damaged streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/fixtures.h"
#include "image/jpeg_huffman.h"

using namespace frugal;
using namespace frugal::testing;
using detail::EntropyDecoder;

namespace {

struct Outcome {
  std::optional<Image> image;  // empty when the decode threw
  JpegRegion region;
  std::string error;
};

Outcome decode(const std::vector<std::uint8_t>& bytes, const CropBox& box, const DecodeOptions& o,
               EntropyDecoder which) {
  Outcome out;
  try {
    Image img;
    out.region = detail::jpeg_decode_region(bytes, box, o, "t.jpg", img, which);
    out.image = std::move(img);
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

void expect_same(const Outcome& fast, const Outcome& ref, const std::string& what) {
  ASSERT_EQ(fast.image.has_value(), ref.image.has_value()) << what << ": " << fast.error << " / " << ref.error;
  if (!ref.image) return;
  EXPECT_EQ(fast.image->width, ref.image->width) << what;
  EXPECT_EQ(fast.image->height, ref.image->height) << what;
  EXPECT_EQ(fast.image->pixels, ref.image->pixels) << what;
  EXPECT_EQ(fast.region.x0, ref.region.x0) << what;
  EXPECT_EQ(fast.region.y0, ref.region.y0) << what;
}

class FastHuffman : public ::testing::Test {
 public:
  static void SetUpTestSuite() { dir_ = image_fixtures(); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  }
  static std::vector<std::uint8_t> fixture(const std::string& name) { return read_bytes(dir_ / name); }
  static std::filesystem::path dir_;
};
std::filesystem::path FastHuffman::dir_;

const CropBox kBoxes[] = {{0, 0, 333, 251},   {15, 17, 33, 31},   {0, 200, 40, 51},
                          {300, 220, 33, 31}, {47, 95, 200, 150}, {161, 0, 100, 251}};

TEST_F(FastHuffman, DecodesEveryKindOfJpegItTakesAsLibjpegDoes) {
  // Baseline 4:2:0, 4:4:4, 4:2:2, gray and CMYK (one interleaved scan with 1 to 6 blocks per MCU),
  // with restart markers every 5 MCUs and every MCU row, with optimised Huffman tables (4:2:0,
  // 4:4:4, gray), and progressive (PIL's ten scans: DC first and refinement, AC first and
  // refinement).
  for (const char* name :
       {"large420.jpg", "large444.jpg", "large422.jpg", "large_gray.jpg", "large_cmyk.jpg", "large_restart.jpg",
        "large_restart_rows.jpg", "large_optimized.jpg", "large444_optimized.jpg", "large_gray_optimized.jpg",
        "large_progressive.jpg", "progressive.jpg"}) {
    const auto bytes = fixture(name);
    const ImageInfo info = read_image_info(bytes, name, 1u << 30);
    for (int channels : {0, 1, 3})
      for (int min_side : {0, 40, 100})  // full size, and DCT scales 1/8 .. 4/8 on the larger boxes
        for (CropBox b : kBoxes) {
          b.x %= info.width, b.y %= info.height;  // progressive.jpg is 131x97
          b.width = std::min(b.width, info.width - b.x), b.height = std::min(b.height, info.height - b.y);
          DecodeOptions o;
          o.channels = channels;
          o.min_width = o.min_height = min_side;
          const auto before = detail::fast_huffman_counts();
          Outcome fast = decode(bytes, b, o, EntropyDecoder::best);
          const auto after = detail::fast_huffman_counts();
          Outcome ref = decode(bytes, b, o, EntropyDecoder::libjpeg);
          const std::string what = std::string(name) + " channels " + std::to_string(channels) + " min " +
                                   std::to_string(min_side) + " box " + std::to_string(b.x) + "," + std::to_string(b.y);
          // The fast decoder really ran, to the end: a test that only compared libjpeg with
          // itself would pass as well.
          EXPECT_EQ(after.used, before.used + 1) << what;
          EXPECT_EQ(after.gave_up, before.gave_up) << what;
          expect_same(fast, ref, what);
        }
  }
}

// The code-length counts (BITS) of every DHT table in a JPEG.
std::vector<std::vector<std::uint8_t>> huffman_bits(const std::vector<std::uint8_t>& b) {
  std::vector<std::vector<std::uint8_t>> tables;
  for (std::size_t i = 2; i + 4 <= b.size() && b[i] == 0xFF;) {
    const std::uint8_t marker = b[i + 1];
    const std::size_t len = b[i + 2] << 8 | b[i + 3];
    if (marker == 0xDA) break;  // entropy-coded data follows
    if (marker == 0xC4) {
      for (std::size_t p = i + 4; p + 17 <= i + 2 + len;) {
        std::vector<std::uint8_t> bits(b.begin() + p + 1, b.begin() + p + 17);
        std::size_t values = 0;
        for (auto n : bits) values += n;
        tables.push_back(std::move(bits));
        p += 17 + values;
      }
    }
    i += 2 + len;
  }
  return tables;
}

// The fixtures said to have optimised Huffman tables do: none of their tables is one of the
// four standard tables of JPEG Annex K.3 that encoders use by default (and the default files'
// tables are, so the check can tell them apart).
TEST_F(FastHuffman, OptimisedFixturesCarryTheirOwnHuffmanTables) {
  const std::vector<std::vector<std::uint8_t>> standard = {
      {0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},      // DC luminance
      {0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},      // DC chrominance
      {0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d},   // AC luminance
      {0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77}};  // AC chrominance
  auto is_standard = [&](const std::vector<std::uint8_t>& t) {
    return std::find(standard.begin(), standard.end(), t) != standard.end();
  };
  for (const char* name : {"large_optimized.jpg", "large444_optimized.jpg", "large_gray_optimized.jpg"}) {
    const auto tables = huffman_bits(fixture(name));
    EXPECT_GE(tables.size(), 2u) << name;
    for (const auto& t : tables) EXPECT_FALSE(is_standard(t)) << name;
  }
  for (const char* name : {"large420.jpg", "large444.jpg", "large_gray.jpg"}) {
    const auto tables = huffman_bits(fixture(name));
    EXPECT_GE(tables.size(), 2u) << name;
    for (const auto& t : tables) EXPECT_TRUE(is_standard(t)) << name;
  }
}

// A progressive image's scans are decoded only down to the rows the box needs (plus what
// upsampling and smoothing read below them): every bottom edge from row 1 to the last, on each
// side of the 8 and 16 px iMCU rows, gives libjpeg's pixels, and the blocks below are skipped.
TEST_F(FastHuffman, ProgressiveScansStopBelowTheBoxWithTheSamePixels) {
  for (const char* name : {"large_progressive.jpg"}) {
    const auto bytes = fixture(name);
    std::uint64_t skipped = 0;
    for (int bottom = 1; bottom <= 251; bottom += bottom < 40 ? 1 : 7)
      for (int scale : {0, 100}) {  // full size, and 4/8
        DecodeOptions o;
        o.min_width = o.min_height = scale;
        const CropBox box{40, std::max(0, bottom - 120), 200, std::min(bottom, 120)};
        const auto before = detail::fast_huffman_counts();
        Outcome fast = decode(bytes, box, o, EntropyDecoder::best);
        skipped += detail::fast_huffman_counts().skipped_mcus - before.skipped_mcus;
        EXPECT_EQ(detail::fast_huffman_counts().gave_up, before.gave_up);
        expect_same(fast, decode(bytes, box, o, EntropyDecoder::libjpeg),
                    std::string(name) + " bottom " + std::to_string(bottom) + " min " + std::to_string(scale));
      }
    EXPECT_GT(skipped, 0u);
  }
}

// Progressive scans with restart markers stay with libjpeg's decoder: nothing is skipped.
TEST_F(FastHuffman, LeavesRestartMarkedProgressiveScansToLibjpeg) {
  const auto bytes = fixture("large_progressive_restart.jpg");
  const auto before = detail::fast_huffman_counts();
  Outcome fast = decode(bytes, {10, 10, 200, 100}, {}, EntropyDecoder::best);
  EXPECT_EQ(detail::fast_huffman_counts().skipped_mcus, before.skipped_mcus);
  EXPECT_EQ(detail::fast_huffman_counts().gave_up, before.gave_up);
  expect_same(fast, decode(bytes, {10, 10, 200, 100}, {}, EntropyDecoder::libjpeg), "progressive restart");
}

// Where the entropy-coded data starts: after the SOS segment.
std::size_t scan_start(const std::vector<std::uint8_t>& b) {
  for (std::size_t i = 2; i + 4 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xDA) return i + 2 + (b[i + 2] << 8 | b[i + 3]);
  return 0;
}

// Flipped bits, stray markers, cut-off ends: either both decoders refuse the file, or both give
// the same pixels (libjpeg decodes many damaged streams with warnings; the fast one then gives
// up and lets libjpeg decode it).
TEST_F(FastHuffman, DamagedStreamsEndAsWithLibjpeg) {
  std::mt19937 rng(11);
  int gave_up = 0, refused = 0, decoded = 0;
  for (const char* name :
       {"large420.jpg", "large444.jpg", "large_gray.jpg", "large_restart.jpg", "large_progressive.jpg"}) {
    const auto clean = fixture(name);
    const std::size_t start = scan_start(clean);
    ASSERT_GT(start, 0u);
    for (int trial = 0; trial < 150; ++trial) {
      auto bytes = clean;
      const std::size_t at = start + rng() % (bytes.size() - 2 - start);
      switch (trial % 5) {
        case 0:
          bytes[at] ^= static_cast<std::uint8_t>(1 << (rng() % 8));
          break;
        case 1:
          bytes[at] = static_cast<std::uint8_t>(rng());
          break;
        case 2:
          bytes[at] = 0xFF, bytes[at + 1] = static_cast<std::uint8_t>(0xD0 + rng() % 8);
          break;  // RSTn
        case 3:
          bytes.resize(at);
          break;  // cut
        case 4:
          for (std::size_t i = at; i < std::min(bytes.size() - 2, at + 64); ++i) bytes[i] = 0;
          break;
      }
      const CropBox box = kBoxes[trial % std::size(kBoxes)];
      const auto before = detail::fast_huffman_counts();
      Outcome fast = decode(bytes, box, {}, EntropyDecoder::best);
      gave_up += static_cast<int>(detail::fast_huffman_counts().gave_up - before.gave_up);
      Outcome ref = decode(bytes, box, {}, EntropyDecoder::libjpeg);
      expect_same(fast, ref, std::string(name) + " trial " + std::to_string(trial));
      ++(ref.image ? decoded : refused);
    }
  }
  // The damage reached both ways out: some files decode anyway, some are refused, and the fast
  // decoder handed some back to libjpeg.
  EXPECT_GT(gave_up, 20);
  EXPECT_GT(refused, 5);
  EXPECT_GT(decoded, 20);
}

}  // namespace
