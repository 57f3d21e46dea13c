// RunWriter: the one writer of a run folder (the CLI's session and frugal.Checkpointer): nothing
// written before begin_writing(), a refused run's folder removed, records held until writing
// begins, --fresh's discards (only frugal's own events), and log records dropped, not the run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../budget/fault_env.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/train/run_writer.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(RunWriter, WritesNothingBeforeTrainingStartsAndHoldsRecordsUntilThen) {
  TempDir dir;
  const fs::path run = dir / "run";
  RunWriter w(run, true);
  w.open(CheckpointOptions{}, std::nullopt, "");
  w.append_metrics_when_writing("{\"plan\": 1}\n");
  EXPECT_FALSE(fs::exists(run / kConfigFile));
  EXPECT_FALSE(fs::exists(run / kMetricsFile));
  EXPECT_EQ(w.writer(), nullptr);
  RunWriter::Start start;
  start.config = run_config({{"keep_last", 2}});
  w.begin_writing(start);
  ASSERT_NE(w.writer(), nullptr);
  const auto config = nlohmann::json::parse(read_text(run / kConfigFile));
  EXPECT_EQ(config["format"], "frugal-run-config");
  EXPECT_EQ(config["version"], 1);
  EXPECT_EQ(config["keep_last"], 2);
  w.append_metrics_when_writing("{\"epoch\": 1}\n");
  EXPECT_EQ(read_text(run / kMetricsFile), "{\"plan\": 1}\n{\"epoch\": 1}\n");
  EXPECT_TRUE(is_run_folder(run));
  w.close();
}

TEST(RunWriter, AbandonRemovesTheFolderItMadeUntilWritingBegins) {
  TempDir dir;
  {
    RunWriter w(dir / "a" / "run", true);
    w.abandon();
  }
  EXPECT_FALSE(fs::exists(dir / "a"));
  RunWriter w(dir / "b", true);
  w.open(CheckpointOptions{}, std::nullopt, "");
  w.begin_writing({run_config({}), false, false, false});
  w.abandon();  // a run that began writing keeps its folder
  EXPECT_TRUE(fs::exists(dir / "b" / kConfigFile));
}

TEST(RunWriter, FreshDropsTheEarlierRunsMetricsAndOnlyFrugalsOwnEvents) {
  TempDir dir;
  const fs::path run = dir / "run";
  fs::create_directories(run);
  put(run / kConfigFile, run_config({}).dump());
  put(run / kMetricsFile, "{\"epoch\": 9}\n");
  put(run / "events.out.tfevents.1.host.frugal", "old");
  put(run / "events.out.tfevents.1.host", "another writer's");
  RunWriter w(run, true);
  w.open(CheckpointOptions{}, std::nullopt, "");
  w.begin_writing({run_config({}), /*fresh=*/true, /*events=*/false, false});
  EXPECT_FALSE(fs::exists(run / kMetricsFile));
  EXPECT_FALSE(fs::exists(run / "events.out.tfevents.1.host.frugal"));
  EXPECT_TRUE(fs::exists(run / "events.out.tfevents.1.host"));
}

TEST(RunWriter, AReaderWritesNothing) {
  TempDir dir;
  const fs::path run = dir / "run";
  fs::create_directories(run);
  RunWriter w(run, /*writes=*/false);
  DiskBudgetOptions bo;
  bo.limit = 1;
  w.open(CheckpointOptions{}, bo, "");  // no budget: only the writer's disk is budgeted
  EXPECT_TRUE(w.may_write(1 << 20, "metrics"));
  w.begin_writing({run_config({}), true, true, false});
  w.append_metrics("{}\n");
  EXPECT_TRUE(w.writing());
  EXPECT_EQ(w.writer(), nullptr);
  EXPECT_TRUE(fs::is_empty(run));
}

TEST(RunWriter, ABudgetWithoutRoomDropsLogRecordsNotTheRun) {
  TempDir dir;
  const fs::path run = dir / "ws" / "run";
  RunWriter w(run, true);
  DiskBudgetOptions bo;
  bo.limit = 1;
  w.open(CheckpointOptions{}, bo, (dir / "ws").string());
  EXPECT_THROW(w.require_room_for_run(1000, 1000), Error);
  EXPECT_FALSE(w.may_write(4096, "metrics.jsonl"));
  EXPECT_NE(w.room_hint().find("raise {disk_budget}"), std::string::npos);
  SaveResult r;
  r.status = SaveResult::Status::skipped_no_room;
  w.note_save(r);
  EXPECT_EQ(w.no_room(), "no room within {disk_budget}");
}

TEST(RunWriter, EndSessionWritesItsReasonToTheSessionsEvents) {
  EXPECT_EQ(RunWriter::session_end_code("done"), 0);
  EXPECT_EQ(RunWriter::session_end_code("deadline"), 1);
  EXPECT_EQ(RunWriter::session_end_code("signal SIGTERM"), 2);
  EXPECT_EQ(RunWriter::session_end_code("signal on another rank"), 2);
  EXPECT_EQ(RunWriter::session_end_code("disk full"), 3);
  EXPECT_EQ(RunWriter::session_end_code("no room within {disk_budget}"), 3);
  EXPECT_EQ(RunWriter::session_end_code("undecodable validation images"), 4);
  EXPECT_EQ(RunWriter::session_end_code("something new"), 5);
  TempDir dir;
  const fs::path run = dir / "run";
  RunWriter w(run, true);
  w.open(CheckpointOptions{}, std::nullopt, "");
  w.end_session(3, "deadline");  // before writing: nothing
  EXPECT_FALSE(fs::exists(run / kMetricsFile));
  RunWriter::Start start;
  start.config = run_config({});
  start.events = true;
  w.begin_writing(start);
  w.end_session(7, "deadline");
  std::string events;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) events += read_text(e.path());
  EXPECT_NE(events.find("session/end"), std::string::npos);  // flushed at once
  EXPECT_FALSE(fs::exists(run / kMetricsFile));              // metrics.jsonl's lines stay epochs and plans
  w.close();
}

}  // namespace
}  // namespace frugal
