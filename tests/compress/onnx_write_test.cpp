// ONNX export under write failures (tests/budget/fault_env.h): a failed export leaves the model
// file that was there before untouched, and no temporary behind.
#include <gtest/gtest.h>

#include "budget/fault_env.h"
#include "frugal/util/fs.h"
#include "frugal/compress/onnx.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

TEST(OnnxWrite, AFailedExportLeavesTheOldFileUntouched) {
  auto model = make_model("cnn", 10, 1);
  ModelInfo info;
  info.name = "cnn";
  info.channels = 1;
  info.image_size = 28;
  info.classes.assign(10, "c");
  info.mean.assign(1, 0.5f);
  info.std.assign(1, 0.25f);
  const std::string bytes = onnx_model_bytes(info, *model);
  for (auto fault : {FaultEnv::Fault::disk_full, FaultEnv::Fault::io}) {
    for (int at = 0;; ++at) {
      TempDir dir;
      const auto out = dir / "model.onnx";
      write_file_atomic(out, "the previous export");
      FaultEnv env;
      env.fault = fault;
      env.torn = true;  // the failing append writes half the model first
      env.fail_at = at;
      bool threw = false;
      try {
        export_onnx(info, *model, out, env);
      } catch (const Error& e) {
        threw = true;
        EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
      }
      const std::string now = read_file(out);
      EXPECT_TRUE(now == "the previous export" || now == bytes) << "at op " << at << ": " << now.size() << " bytes";
      for (const auto& e : fs::directory_iterator(dir.path()))
        EXPECT_FALSE(is_temp_path(e.path())) << "at op " << at << ": " << e.path();
      if (!threw) {
        EXPECT_EQ(now, bytes);
        EXPECT_GE(at, 6) << "create, append, sync, close, rename, folder sync";
        break;
      }
    }
  }
}

}  // namespace
}  // namespace frugal
