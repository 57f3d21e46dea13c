#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "budget/fault_env.h"
#include "frugal/budget/budget.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::TempDir;

// A minimal frugal checkpoint written by hand (no LibTorch): one U8 tensor.
std::string tiny_checkpoint(const std::string& payload, std::optional<double> metric, const std::string& base = "") {
  nlohmann::json md = {{"format", kCheckpointFormat},
                       {"version", std::to_string(kCheckpointVersion)},
                       {"kind", base.empty() ? "full" : "delta"},
                       {"checksum", payload_checksum(payload.data(), payload.size())}};
  if (metric) {
    md["metric_value"] = std::to_string(*metric);
    md["metric_mode"] = "max";
  }
  if (!base.empty()) md["base"] = base;
  nlohmann::json h = {{"__metadata__", md},
                      {"w", {{"dtype", "U8"}, {"shape", {payload.size()}}, {"data_offsets", {0, payload.size()}}}}};
  std::string json = h.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + payload;
}

void put(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  write_file_atomic(p, bytes);
}

TEST(CheckpointName, RoundTripsAndRejectsOtherFiles) {
  EXPECT_EQ(checkpoint_file_name(3, 120, false), "ckpt-e0003-s000120.safetensors");
  EXPECT_EQ(checkpoint_file_name(3, 150, true), "ckpt-e0003-s000150.delta.safetensors");
  auto n = parse_checkpoint_name("ckpt-e0012-s1234567.delta.safetensors");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->epoch, 12);
  EXPECT_EQ(n->step, 1234567);
  EXPECT_TRUE(n->delta);
  EXPECT_FALSE(parse_checkpoint_name("best.safetensors"));
  EXPECT_FALSE(parse_checkpoint_name("ckpt-e0003-s000120.safetensors.frugal-tmp-abc"));
}

TEST(VerifyCheckpoint, AcceptsGoodAndNamesTruncatedOrFlippedFiles) {
  TempDir dir;
  std::string good = tiny_checkpoint("0123456789abcdef", 0.5);
  put(dir / "good.safetensors", good);
  EXPECT_EQ(verify_checkpoint_file(dir / "good.safetensors"), "");
  put(dir / "short.safetensors", good.substr(0, good.size() - 3));
  EXPECT_NE(verify_checkpoint_file(dir / "short.safetensors").find("truncated"), std::string::npos);
  std::string flipped = good;
  flipped[flipped.size() - 1] ^= 1;
  put(dir / "flip.safetensors", flipped);
  EXPECT_NE(verify_checkpoint_file(dir / "flip.safetensors").find("checksum"), std::string::npos);
  put(dir / "garbage.safetensors", "not a safetensors file at all");
  EXPECT_NE(verify_checkpoint_file(dir / "garbage.safetensors"), "");
}

TEST(ListCheckpoints, NewestFirstWithMetricsAndValidity) {
  TempDir dir;
  put(dir / checkpoint_file_name(1, 10, false), tiny_checkpoint("aaaa", 0.3));
  put(dir / checkpoint_file_name(2, 20, false), tiny_checkpoint("bbbb", 0.9));
  std::string bad = tiny_checkpoint("cccc", 0.1);
  bad.back() ^= 0x40;
  put(dir / checkpoint_file_name(3, 30, false), bad);
  auto list = list_checkpoints(dir.path(), true);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].name.step, 30);
  EXPECT_FALSE(list[0].valid);
  EXPECT_TRUE(list[1].valid);
  EXPECT_DOUBLE_EQ(*list[1].metric, 0.9);
}

std::vector<CheckpointEntry> entries(std::vector<std::tuple<int, std::optional<double>, bool>> spec) {
  std::vector<CheckpointEntry> out;
  for (auto& [step, metric, valid] : spec) {
    CheckpointEntry e;
    e.path = checkpoint_file_name(0, step, false);
    e.name.step = step;
    e.metric = metric;
    e.valid = valid;
    out.insert(out.begin(), e);  // newest first
  }
  return out;
}

std::vector<std::string> names(const std::vector<fs::path>& ps) {
  std::vector<std::string> out;
  for (auto& p : ps) out.push_back(p.string());
  return out;
}

TEST(Retention, KeepsLastAndBestAndDeletesTheRestOldestFirst) {
  auto e = entries({{1, 0.2, true}, {2, 0.9, true}, {3, 0.5, true}, {4, 0.4, true}, {5, 0.3, true}});
  auto del = names(checkpoints_to_delete(e, {.keep_last = 2, .keep_best = 1}));
  EXPECT_EQ(del, (std::vector<std::string>{checkpoint_file_name(0, 1, false), checkpoint_file_name(0, 3, false)}));
}

TEST(Retention, NeverDeletesTheNewestValidOrInvalidFiles) {
  // Newest is corrupt: the newest valid (step 4) is kept even with keep_last 0, and the corrupt
  // file is left for the user to inspect.
  auto e = entries({{3, std::nullopt, true}, {4, std::nullopt, true}, {5, std::nullopt, false}});
  auto del = names(checkpoints_to_delete(e, {.keep_last = 0, .keep_best = 0}));
  EXPECT_EQ(del, (std::vector<std::string>{checkpoint_file_name(0, 3, false)}));
  EXPECT_TRUE(checkpoints_to_delete(entries({{1, std::nullopt, false}}), {.keep_last = 0, .keep_best = 0}).empty());
}

TEST(Retention, KeepsTheBaseOfAKeptDelta) {
  TempDir dir;
  put(dir / checkpoint_file_name(0, 10, false), tiny_checkpoint("base", std::nullopt));
  put(dir / checkpoint_file_name(0, 20, true), tiny_checkpoint("d1", std::nullopt, checkpoint_file_name(0, 10, false)));
  put(dir / checkpoint_file_name(0, 30, true), tiny_checkpoint("d2", std::nullopt, checkpoint_file_name(0, 10, false)));
  auto del = checkpoints_to_delete(list_checkpoints(dir.path(), true), {.keep_last = 1, .keep_best = 0});
  ASSERT_EQ(del.size(), 1u);
  EXPECT_EQ(del[0].filename(), checkpoint_file_name(0, 20, true));
}

TEST(RetentionConfig, ReadsKeepSettingsAndBudgetFromConfigJson) {
  TempDir dir;
  fs::create_directories(dir / "run1");
  put(dir / "run1" / kConfigFile,
      R"({"format": "frugal-run-config", "keep_best": 3, "keep_last": 5, "disk_budget": "2G"})");
  fs::create_directories(dir / "run2");
  put(dir / "run2" / kConfigFile, R"({"format": "frugal-run-config", "disk_budget": 1000})");
  fs::create_directories(dir / "run3");
  put(dir / "run3" / kConfigFile, R"({"format": "frugal-run-config", "disk_budget": ""})");  // no budget
  auto p = retention_from_config(dir / "run1");
  EXPECT_EQ(p.keep_best, 3);
  EXPECT_EQ(p.keep_last, 5);
  auto runs = find_run_folders(dir.path());
  ASSERT_EQ(runs.size(), 3u);
  auto b = budget_from_runs(runs);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->first, 1000u);
}

ErrorKind error_of(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "did not fail";
  return ErrorKind::io;
}

// "keep_last": "10" once read as the default 2, and clean deleted 6 of 8 checkpoints.
TEST(RetentionConfig, WholeNumbersAreTakenAndAnythingElseIsRefusedNamingFileKeyAndValue) {
  TempDir dir;
  for (const char* ten : {"10", "10.0", "1e1", "1.0e+1"}) {
    put(dir / kConfigFile, std::string(R"({"keep_last": )") + ten + R"(, "keep_best": 0.0})");
    auto p = retention_from_config(dir.path());
    EXPECT_EQ(p.keep_last, 10) << ten;
    EXPECT_EQ(p.keep_best, 0) << ten;
  }
  for (const char* bad : {R"("10")", "-1", "2.5", "true", "null", "{}", "[10]", "1e300", "2097152"}) {
    put(dir / kConfigFile, std::string(R"({"keep_last": )") + bad + "}");
    std::string what;
    EXPECT_EQ(error_of([&] { retention_from_config(dir.path()); }, &what), ErrorKind::invalid) << bad;
    EXPECT_NE(what.find((dir / kConfigFile).string() + ": keep_last"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string(bad).substr(0, 2)), std::string::npos) << what;
    EXPECT_NE(what.find("nothing was deleted"), std::string::npos) << what;
  }
}

TEST(RetentionConfig, ADiskBudgetThatIsNoSizeIsRefused) {
  TempDir dir;
  put(dir / kConfigFile, R"({"format": "frugal-run-config", "disk_budget": 1e9})");
  auto b = budget_from_runs({dir.path()});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->first, 1000000000u);
  for (const char* bad : {"true", "-5", "2.5", R"("lots")", "{}"}) {
    put(dir / kConfigFile, std::string(R"({"disk_budget": )") + bad + "}");
    EXPECT_EQ(error_of([&] { budget_from_runs({dir.path()}); }), ErrorKind::invalid) << bad;
  }
}

// A FIFO would block the read forever; /dev/zero would be read without end; a link leads out.
TEST(RunConfig, AConfigThatIsNotARegularFileInTheFolderIsRefusedAtOnce) {
  TempDir dir;
  fs::create_directories(dir / "fifo");
  ASSERT_EQ(::mkfifo((dir / "fifo" / kConfigFile).c_str(), 0644), 0);
  fs::create_directories(dir / "zero");
  fs::create_symlink("/dev/zero", dir / "zero" / kConfigFile);
  fs::create_directories(dir / "out");
  put(dir / "elsewhere.json", R"({"format": "frugal-run-config", "keep_last": 1})");
  fs::create_symlink(dir / "elsewhere.json", dir / "out" / kConfigFile);
  const auto start = std::chrono::steady_clock::now();
  for (const char* run : {"fifo", "zero", "out"}) {
    std::string what;
    EXPECT_EQ(error_of([&] { retention_from_config(dir / run); }, &what), ErrorKind::invalid) << run;
    EXPECT_NE(what.find((dir / run / kConfigFile).string()), std::string::npos) << what;
    EXPECT_EQ(error_of([&] { budget_from_runs({dir / run}); }), ErrorKind::invalid) << run;
    EXPECT_FALSE(is_run_folder(dir / run)) << run;  // not frugal's by its config alone
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  put(dir / "big" / kConfigFile, std::string(2 << 20, ' '));
  EXPECT_EQ(error_of([&] { retention_from_config(dir / "big"); }), ErrorKind::invalid);
}

TEST(RunFolder, AnotherProgramsFolderWithAConfigOfItsOwnIsNotARunFolder) {
  TempDir dir;
  put(dir / "hf" / kConfigFile, R"({"architectures": ["ViTForImageClassification"], "keep_last": 1})");
  put(dir / "hf" / "model.safetensors", tiny_checkpoint("abcd", std::nullopt));
  put(dir / "hf" / "best.safetensors", tiny_checkpoint("abcd", std::nullopt));
  put(dir / "run" / kConfigFile, R"({"format": "frugal-run-config", "version": 1})");
  put(dir / "old" / checkpoint_file_name(1, 10, false), tiny_checkpoint("ab", std::nullopt));
  EXPECT_FALSE(is_run_folder(dir / "hf"));
  EXPECT_TRUE(is_run_folder(dir / "run"));
  EXPECT_TRUE(is_run_folder(dir / "old"));
  auto runs = find_run_folders(dir.path());
  EXPECT_EQ(runs, (std::vector<fs::path>{dir / "old", dir / "run"}));
  DiskUsage u = measure_usage(dir.path());
  EXPECT_EQ(u.checkpoints, allocated_size(dir / "old" / checkpoint_file_name(1, 10, false)));
}

TEST(RunFolder, LinksInAWorkspaceAreCountedAsThemselvesNeverFollowed) {
  TempDir dir;
  put(dir / "big.bin", std::string(1 << 20, 'b'));
  fs::create_directories(dir / "ws");
  fs::create_symlink(dir / "big.bin", dir / "ws" / "link.zip");
  DiskUsage u = measure_usage(dir / "ws");
  EXPECT_EQ(u.data, 0u);
  EXPECT_LT(u.total(), 8192u);
}

}  // namespace
}  // namespace frugal
