// Archive writers under injected failures (tests/budget/fault_env.h): a manifest, a split set and
// a packed zip either appear whole or leave what was there before, with no temporary behind.
#include <gtest/gtest.h>

#include <fstream>

#include "archive/manifest.h"
#include "archive/part_writer.h"
#include "budget/fault_env.h"
#include "frugal/util/fs.h"
#include "frugal/archive/pack.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::FaultEnv;
using testing::TempDir;

int temporaries_in(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += is_temp_path(e.path());
  return n;
}

SplitManifest manifest_of(const std::string& name, std::uint64_t size) {
  SplitManifest m;
  m.name = name;
  m.size = size;
  m.sha256 = std::string(64, 'a');
  m.parts.push_back({name + ".part0000", size, std::string(64, 'b')});
  return m;
}

// Every operation of the manifest's write fails in turn, the failing append writing half its
// bytes first: the manifest on disk is the old one or the new one, whole.
TEST(WriteFaults, AManifestIsOldOrNewNeverTorn) {
  for (auto fault : {FaultEnv::Fault::disk_full, FaultEnv::Fault::io}) {
    for (int at = 0;; ++at) {
      TempDir dir;
      const auto path = dir / "x.zip.manifest.json";
      const SplitManifest old_m = manifest_of("x.zip", 100), new_m = manifest_of("x.zip", 200);
      old_m.save(path);
      FaultEnv env;
      env.fault = fault;
      env.torn = true;
      env.fail_at = at;
      bool threw = false;
      try {
        new_m.save(path, env);
      } catch (const Error& e) {
        threw = true;
        EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
      }
      const std::string now = read_file(path);
      EXPECT_TRUE(now == old_m.to_json() || now == new_m.to_json()) << "at op " << at << ": " << now;
      EXPECT_EQ(SplitManifest::load(path).size, now == old_m.to_json() ? 100u : 200u);
      EXPECT_EQ(temporaries_in(dir.path()), 0) << "at op " << at;
      if (!threw) {
        EXPECT_EQ(now, new_m.to_json());
        EXPECT_GE(at, 6) << "create, append, sync, close, rename, folder sync";
        break;
      }
    }
  }
}

// A split set whose writing fails at any operation (a part's create, append, sync, rename, the
// manifest) leaves nothing: no part, no temporary, no manifest naming missing parts.
TEST(WriteFaults, ASplitSetFailingMidwayLeavesNothing) {
  std::string data(3000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  for (int at = 0;; ++at) {
    TempDir dir;
    FaultEnv env;
    env.torn = true;
    env.fail_at = at;
    bool threw = false;
    try {
      PartWriter w(dir.path(), "x.zip", 1000, 4, /*sync=*/true, env);
      w.write(data.data(), data.size());
      w.finish(dir / "x.zip.manifest.json");
    } catch (const DiskFullError&) {
      threw = true;
    }
    if (!threw) {
      EXPECT_EQ(SplitManifest::load(dir / "x.zip.manifest.json").parts.size(), 3u);
      EXPECT_GT(at, 15) << "3 parts of 5 operations each, a folder sync and the manifest's 6";
      break;
    }
    const bool has_manifest = fs::exists(dir / "x.zip.manifest.json");
    if (has_manifest) {
      // Only a failure after the manifest's rename (its folder sync) leaves one: then it is whole
      // and every part it names is there.
      auto m = SplitManifest::load(dir / "x.zip.manifest.json");
      for (const auto& p : m.parts) {
        ASSERT_TRUE(fs::exists(dir / p.file)) << "at op " << at << ": the manifest names a removed part";
        EXPECT_EQ(fs::file_size(dir / p.file), p.size) << "at op " << at;
      }
    } else {
      EXPECT_TRUE(fs::is_empty(dir.path())) << "at op " << at;
    }
    EXPECT_EQ(temporaries_in(dir.path()), 0) << "at op " << at;
  }
}

// `frugal pack` to one zip with a disk that fills at the N-th append: the old zip stays as it was.
TEST(WriteFaults, PackKeepsTheOldZipWhenTheDiskFills) {
  TempDir dir;
  fs::create_directories(dir / "src/a");
  fs::create_directories(dir / "src/b");
  for (int i = 0; i < 20; ++i) {
    std::ofstream(dir / "src/a" / ("f" + std::to_string(i) + ".txt")) << std::string(5000 + i, 'a');
    std::ofstream(dir / "src/b" / ("g" + std::to_string(i) + ".txt")) << std::string(3000 + i, 'b');
  }
  PackOptions o;
  o.output = dir / "out/x.zip";
  pack(dir / "src", o);
  const std::string old_zip = read_file(o.output);
  std::ofstream(dir / "src/b/new.txt") << "one more";
  FaultEnv env;
  env.torn = true;
  env.sticky = true;
  env.fail_append_at = 0;
  EXPECT_THROW(pack(dir / "src", o, env), DiskFullError);
  EXPECT_EQ(read_file(o.output), old_zip);
  EXPECT_EQ(temporaries_in(dir / "out"), 0);
  // Without the fault the new entry is packed: the test above did reach the write.
  pack(dir / "src", o);
  EXPECT_NE(read_file(o.output), old_zip);
}

}  // namespace
}  // namespace frugal
