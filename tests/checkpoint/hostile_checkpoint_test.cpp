// Crafted checkpoints: self-based and cyclic deltas, bases outside the run folder, wrapping
// offsets, claimed sizes, metadata of the wrong JSON type. Each is Error(invalid) (exit 3) naming
// the file, and a resume meeting one falls back to the previous good checkpoint.
#include <gtest/gtest.h>

#include <limits>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::error_kind;
using testing::small_checkpoint;
using testing::TempDir;

// Rewrites `from` as `to` with its metadata changed by `edit`. The checksum covers the payload
// only, so it stays valid: only the metadata is hostile.
template <class Edit>
void rewrite(const fs::path& from, const fs::path& to, Edit&& edit) {
  auto file = load_safetensors(from);
  edit(file.metadata);
  write_file_atomic(to, safetensors_bytes(file.tensors, file.metadata));
}

std::string meta(const fs::path& file, const std::string& key) {
  return read_safetensors_header(file).metadata.at(key);
}

// RUN/ckpt-e0001-s000010.safetensors (full) and RUN/ckpt-e0002-s000020.delta.safetensors on it.
struct DeltaRun {
  TempDir dir;
  fs::path run = dir / "run";
  fs::path full = run / checkpoint_file_name(1, 10, false);
  fs::path delta = run / checkpoint_file_name(2, 20, true);
  DeltaRun() {
    fs::create_directories(run);
    auto base = small_checkpoint(10, 0.5, 1);
    save_checkpoint(full, base);
    auto next = small_checkpoint(20, 0.6, 2);
    save_delta_checkpoint(delta, next, base, full);
  }
};

void expect_invalid(const fs::path& file, const std::string& mentions = "") {
  try {
    load_checkpoint(file);
    ADD_FAILURE() << file << " loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.filename().string()), std::string::npos) << e.what();
    if (!mentions.empty()) EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(HostileDelta, DeltaBasedOnItselfIsRefusedNotAStackOverflow) {
  DeltaRun r;
  rewrite(r.delta, r.delta, [&](Metadata& md) {
    md["base"] = r.delta.filename().string();
    md["base_checksum"] = md["checksum"];  // so that the old check "base unchanged" passed
  });
  expect_invalid(r.delta, "itself");
}

TEST(HostileDelta, TwoDeltasBasedOnEachOtherAreRefused) {
  DeltaRun r;
  const fs::path other = r.run / checkpoint_file_name(3, 30, true);
  const std::string own_sum = meta(r.delta, "checksum");
  rewrite(r.delta, other, [&](Metadata& md) {
    md["base"] = r.delta.filename().string();
    md["base_checksum"] = own_sum;
  });
  rewrite(r.delta, r.delta, [&](Metadata& md) {
    md["base"] = other.filename().string();
    md["base_checksum"] = own_sum;  // `other` has the same payload, hence the same checksum
  });
  expect_invalid(r.delta, "full checkpoint");
  expect_invalid(other, "full checkpoint");
}

TEST(HostileDelta, BaseOutsideTheRunFolderIsRefused) {
  DeltaRun r;
  fs::create_directories(r.dir / "elsewhere");
  fs::copy_file(r.full, r.dir / "elsewhere/secret.safetensors");
  rewrite(r.delta, r.delta, [&](Metadata& md) { md["base"] = "../elsewhere/secret.safetensors"; });
  expect_invalid(r.delta, "../elsewhere/secret.safetensors");
  rewrite(r.delta, r.delta, [&](Metadata& md) { md["base"] = (r.dir / "elsewhere/secret.safetensors").string(); });
  expect_invalid(r.delta);
}

TEST(HostileDelta, IndexClaimingAHugeTensorIsRefusedBeforeAllocating) {
  DeltaRun r;
  rewrite(r.delta, r.delta, [&](Metadata& md) {
    auto index = nlohmann::json::parse(md["delta_index"]);
    for (auto& item : index)
      if (item[3] != "same") {
        item[2] = {std::uint64_t{1} << 40};  // 4 TiB of F32 from a few stored bytes
        item[3] = "raw";
        break;
      }
    md["delta_index"] = index.dump();
  });
  expect_invalid(r.delta);
}

TEST(HostileDelta, ResumeSkipsACraftedDeltaAndUsesThePreviousGoodCheckpoint) {
  DeltaRun r;
  rewrite(r.delta, r.delta, [&](Metadata& md) {
    md["base"] = r.delta.filename().string();
    md["base_checksum"] = md["checksum"];
  });
  CheckpointManager m(r.run, {});
  auto resumed = m.load_latest();
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->file, r.full);
  EXPECT_EQ(resumed->ckpt.step, 10);
  ASSERT_EQ(resumed->skipped.size(), 1u);
  EXPECT_NE(resumed->skipped[0].find(r.delta.filename().string()), std::string::npos);
  EXPECT_EQ(m.resumable_step(), 10);
}

TEST(HostileCheckpoint, WrappingDataOffsetsAreInvalidNotARead) {
  TempDir dir;
  const std::uint64_t end = std::numeric_limits<std::uint64_t>::max() - 15;
  nlohmann::json h = {{"__metadata__", {{"format", kCheckpointFormat}, {"version", "1"}, {"checksum", "x"}}},
                      {"w", {{"dtype", "U8"}, {"shape", {end}}, {"data_offsets", {0, end}}}}};
  std::string json = h.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  bytes += json + std::string(64, 'p');
  write_file_atomic(dir / "crafted.safetensors", bytes);
  EXPECT_EQ(error_kind([&] { load_safetensors(dir / "crafted.safetensors"); }), ErrorKind::invalid);
  expect_invalid(dir / "crafted.safetensors");
}

TEST(HostileCheckpoint, MetadataOfTheWrongJsonTypeIsInvalidInputNotAnInternalError) {
  TempDir dir;
  save_checkpoint(dir / "good.safetensors", small_checkpoint(10, 0.5));
  const std::pair<const char*, const char*> edits[] = {
      {"classes", R"({"a": 1})"},
      {"mean", R"(["x"])"},
      {"metric_value", "not a number"},
      {"std", "[1e999]"},
      // read later by the trainer's resume with json::value<T>(), which throws type_error
      {"loader", R"({"epoch": "one"})"},
      {"loader", R"({"position": 1.5})"},
      {"schedule", R"({"micro_batch": []})"},
      {"config", "[]"},
      {"metrics", "3"}};
  for (const auto& [key, value] : edits) {
    rewrite(dir / "good.safetensors", dir / "bad.safetensors", [&](Metadata& md) { md[key] = value; });
    SCOPED_TRACE(key);
    expect_invalid(dir / "bad.safetensors");
  }
}

}  // namespace
}  // namespace frugal
