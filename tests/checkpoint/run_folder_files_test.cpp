// What frugal finds in a run folder: whose the folder is (a Hugging Face model folder is not
// frugal's), and its files read and appended only as regular files, never through a link out of
// the folder or a FIFO (which would block: each FIFO case here unblocks it after a while, so code
// that waits on one fails the test instead of hanging it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/env.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/run_folder.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::error_kind;
using testing::small_checkpoint;
using testing::TempDir;
using Kind = RunFolderOwner::Kind;

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void make_fifo(const fs::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0) << p; }

// Runs `f` on another thread and reports whether it finished within `limit`. Past that, `fifo` is
// opened for reading (kept open, so a writer never gets SIGPIPE) and for writing and closed again
// (an EOF), until `f` returns: code that waits on the FIFO fails the test instead of hanging it.
bool finishes_within(std::chrono::milliseconds limit, const fs::path& fifo, const std::function<void()>& f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(limit) == std::future_status::ready) {
    done.get();
    return true;
  }
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  while (done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  done.get();
  if (reader >= 0) ::close(reader);
  return false;
}

// What `f` throws, for messages.
template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kHubConfig = R"({"architectures": ["ViTForImageClassification"], "model_type": "vit"})";

TEST(RunFolderOwner, AbsentEmptyOrOnlyHiddenEntries) {
  TempDir dir;
  EXPECT_EQ(run_folder_owner(dir / "run").kind, Kind::absent);
  fs::create_directory(dir / "run");
  EXPECT_EQ(run_folder_owner(dir / "run").kind, Kind::empty);
  fs::create_directory(dir / "run" / ".ipynb_checkpoints");  // what Jupyter leaves in a folder
  EXPECT_EQ(run_folder_owner(dir / "run").kind, Kind::empty);
}

TEST(RunFolderOwner, AFrugalConfigVouchesForTheFolder) {
  TempDir dir;
  write(dir / kConfigFile, R"({"format": "frugal-run-config", "version": 1})");
  write(dir / "notes.txt", "mine");
  EXPECT_EQ(run_folder_owner(dir.path()).kind, Kind::frugal);
}

TEST(RunFolderOwner, AHuggingFaceModelFolderIsForeignNamingItsFiles) {
  TempDir dir;
  write(dir / kConfigFile, kHubConfig);
  write(dir / "model.safetensors", safetensors_bytes({{"w", torch::zeros({4})}}, {{"format", "pt"}}));
  write(dir / "README.md", "# a model");
  const RunFolderOwner o = run_folder_owner(dir.path());
  EXPECT_EQ(o.kind, Kind::foreign);
  EXPECT_EQ(o.foreign, 3u);
  EXPECT_EQ(o.reasons, (std::vector<std::string>{"config.json is not a frugal run configuration", "README.md",
                                                 "model.safetensors"}));
}

TEST(RunFolderOwner, WithoutAConfigOnlyFrugalsOwnFilesCount) {
  TempDir dir;
  save_checkpoint(dir / checkpoint_file_name(1, 10, false), small_checkpoint(10));
  write(dir / kMetricsFile, "{}\n");
  write(dir / "events.out.tfevents.1.host.frugal", "");
  write(dir / (std::string(kConfigFile) + ".frugal-tmp-0123456789abcdef"), "");
  EXPECT_EQ(run_folder_owner(dir.path()).kind, Kind::frugal);

  // A checkpoint's name on someone else's safetensors, another writer's TensorBoard file.
  write(dir / checkpoint_file_name(2, 20, false), safetensors_bytes({{"w", torch::zeros({4})}}, {}));
  write(dir / "events.out.tfevents.1.host.4242.0", "");
  const RunFolderOwner o = run_folder_owner(dir.path());
  EXPECT_EQ(o.kind, Kind::foreign);
  EXPECT_EQ(o.reasons, (std::vector<std::string>{"ckpt-e0002-s000020.safetensors is not a frugal checkpoint",
                                                 "events.out.tfevents.1.host.4242.0"}));

  // Someone's metrics.jsonl alone would get frugal's lines appended.
  TempDir logs;
  write(logs / kMetricsFile, "{\"loss\": 1}\n");
  EXPECT_EQ(run_folder_owner(logs.path()).kind, Kind::foreign);
}

TEST(RunFolderOwner, NamesAtMostFiveAndCountsTheRest) {
  TempDir dir;
  for (int i = 0; i < 8; ++i) write(dir / ("f" + std::to_string(i)), "");
  fs::create_directory(dir / "sub");
  const RunFolderOwner o = run_folder_owner(dir.path());
  EXPECT_EQ(o.kind, Kind::foreign);
  EXPECT_EQ(o.foreign, 9u);
  EXPECT_EQ(o.reasons.size(), kForeignShown);
  EXPECT_EQ(run_folder_owner(dir / "f0").reasons, std::vector<std::string>{"a regular file, not a folder"});
}

TEST(RunFolderOwner, AConfigTooLargeToBeOursIsNotReadWhole) {
  TempDir dir;
  write(dir / kConfigFile, R"({"format": "frugal-run-config", "pad": ")" + std::string(2 << 20, 'x') + "\"}");
  EXPECT_EQ(run_folder_owner(dir.path()).kind, Kind::foreign);
}

// config.json, metrics.jsonl, best.safetensors, frugal's events: as a FIFO, a link to a file out of
// the folder, a link to /dev/zero. Each is bad input naming the file, found without opening it.
TEST(RunFolderOwner, OwnFilesThatAreNotRegularFilesAreBadInputNamedAndNeverOpened) {
  TempDir dir;
  write(dir / "outside.json", R"({"format": "frugal-run-config", "version": 1})");
  const std::string outside = read(dir / "outside.json");
  for (const std::string name : {kConfigFile, kMetricsFile, kBestFile, "events.out.tfevents.1.host.frugal"}) {
    for (const std::string as : {"fifo", "link out", "dev zero"}) {
      SCOPED_TRACE(name + " as " + as);
      const fs::path run = dir / "run";
      fs::create_directory(run);
      if (name != kConfigFile) write(run / kConfigFile, R"({"format": "frugal-run-config"})");
      if (as == "fifo")
        make_fifo(run / name);
      else
        fs::create_symlink(as == "dev zero" ? fs::path("/dev/zero") : dir / "outside.json", run / name);
      std::string what;
      const bool in_time = finishes_within(std::chrono::seconds(2), run / name,
                                           [&] { what = error_text([&] { run_folder_owner(run); }); });
      EXPECT_TRUE(in_time) << "waited on the FIFO";
      EXPECT_NE(what.find((run / name).string()), std::string::npos) << what;
      EXPECT_NE(what.find(as == "fifo" ? "a FIFO" : "a symbolic link"), std::string::npos) << what;
      EXPECT_EQ(error_kind([&] { run_folder_owner(run); }), ErrorKind::invalid);
      testing::remove_tree_quietly(run);
    }
  }
  EXPECT_EQ(read(dir / "outside.json"), outside);
}

TEST(HostileRunFiles, ARunFoldersBestThatIsAFifoOrALinkIsRefusedUnread) {
  TempDir dir;
  save_checkpoint(dir / "good.safetensors", small_checkpoint(7));
  const fs::path run = dir / "run";
  fs::create_directory(run);
  make_fifo(run / kBestFile);
  std::optional<ErrorKind> kind;
  EXPECT_TRUE(finishes_within(std::chrono::seconds(2), run / kBestFile, [&] {
    kind = error_kind([&] { load_model_any(run); });
  })) << "waited on best.safetensors, a FIFO";
  EXPECT_EQ(kind, ErrorKind::invalid);
  for (const fs::path target : {dir / "good.safetensors", fs::path("/dev/zero")}) {
    fs::remove(run / kBestFile);
    fs::create_symlink(target, run / kBestFile);
    const std::string what = error_text([&] { load_ckpt_arg(run); });
    EXPECT_NE(what.find("best.safetensors: expected a regular file, found a symbolic link"), std::string::npos) << what;
    EXPECT_EQ(error_kind([&] { summarize_model_file(run); }), ErrorKind::invalid);
  }
  // A file the user names may be a link, to a regular file.
  fs::create_symlink(dir / "good.safetensors", dir / "link.safetensors");
  EXPECT_EQ(load_ckpt_arg(dir / "link.safetensors").step, 7);
}

TEST(HostileRunFiles, AResumeSkipsCheckpointsThatAreNotRegularFiles) {
  TempDir dir;
  const fs::path run = dir / "run";
  {
    CheckpointManager m(run, {});
    ASSERT_EQ(m.save(small_checkpoint(10)).status, SaveResult::Status::saved);
  }
  save_checkpoint(dir / "newer.safetensors", small_checkpoint(30));
  fs::create_symlink(dir / "newer.safetensors", run / checkpoint_file_name(3, 30, false));
  fs::create_symlink("/dev/zero", run / checkpoint_file_name(4, 40, false));
  make_fifo(run / checkpoint_file_name(2, 20, false));
  auto list = list_checkpoints(run, /*verify=*/true);
  ASSERT_EQ(list.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(list[i].valid) << list[i].path;
    EXPECT_NE(list[i].problem.find("expected a regular file"), std::string::npos) << list[i].problem;
  }
  std::optional<CheckpointManager::Resume> r;
  const bool in_time = finishes_within(std::chrono::seconds(2), run / checkpoint_file_name(2, 20, false), [&] {
    CheckpointManager m(run, {});
    r = m.load_latest();
  });
  EXPECT_TRUE(in_time) << "waited on a FIFO checkpoint";
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ckpt.step, 10);
  EXPECT_EQ(r->skipped.size(), 3u);
}

TEST(HostileRunFiles, AppendsGoOnlyToRegularFiles) {
  TempDir dir;
  write(dir / "outside.jsonl", "theirs\n");
  fs::create_symlink(dir / "outside.jsonl", dir / "metrics.jsonl");
  EXPECT_EQ(error_kind([&] { Env::real().new_appendable_file(dir / "metrics.jsonl"); }), ErrorKind::invalid);
  fs::create_symlink("/dev/null", dir / "events.out.tfevents.1.host.frugal");
  EXPECT_EQ(error_kind([&] { Env::real().new_appendable_file(dir / "events.out.tfevents.1.host.frugal"); }),
            ErrorKind::invalid);
  EXPECT_EQ(read(dir / "outside.jsonl"), "theirs\n");

  make_fifo(dir / "fifo.jsonl");
  std::string what;
  EXPECT_TRUE(finishes_within(std::chrono::seconds(2), dir / "fifo.jsonl", [&] {
    what = error_text([&] { Env::real().new_appendable_file(dir / "fifo.jsonl")->append("x\n"); });
  })) << "waited on a FIFO";
  EXPECT_NE(what.find("fifo.jsonl: expected a regular file to append to, found a FIFO"), std::string::npos) << what;
  // With a reader on the FIFO the open itself succeeds: the kind is checked after it.
  const int reader = ::open((dir / "fifo.jsonl").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(error_kind([&] { Env::real().new_appendable_file(dir / "fifo.jsonl"); }), ErrorKind::invalid);
  ::close(reader);

  // A regular file is appended to as before.
  write(dir / "log.jsonl", "a\n");
  auto f = Env::real().new_appendable_file(dir / "log.jsonl");
  f->append("b\n");
  f->close();
  EXPECT_EQ(read(dir / "log.jsonl"), "a\nb\n");
}

TEST(HostileRunFiles, WeightsTheUserNamesMustBeARegularFile) {
  TempDir dir;
  make_fifo(dir / "init.safetensors");
  std::optional<ErrorKind> kind;
  EXPECT_TRUE(finishes_within(std::chrono::seconds(2), dir / "init.safetensors", [&] {
    kind = error_kind([&] { load_safetensors(dir / "init.safetensors"); });
  })) << "waited on a FIFO given as weights";
  EXPECT_EQ(kind, ErrorKind::invalid);
}

}  // namespace
}  // namespace frugal
