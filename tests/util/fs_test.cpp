// open_regular, FileLock and temp_path_for: the file primitives frugal's folders rely on.
#include "frugal/util/fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <fstream>
#include <thread>

#include "frugal/util/error.h"

namespace frugal {
namespace {
namespace fs = std::filesystem;

fs::path make_temp_dir() {
  char tmpl[] = "/tmp/frugal-fs-test-XXXXXX";
  return fs::path(::mkdtemp(tmpl));
}

struct FsTest : ::testing::Test {
  fs::path dir = make_temp_dir();
  ~FsTest() override { fs::remove_all(dir); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(FsTest, OpenRegularRefusesAFifoAtOnceInsteadOfBlocking) {
  const fs::path fifo = dir / "best.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { open_regular(fifo); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fifo.string()), std::string::npos) << msg;
}

TEST_F(FsTest, OpenRegularRefusesDevicesAndOwnFolderLinks) {
  const fs::path zero = dir / "config.json";
  fs::create_symlink("/dev/zero", zero);
  EXPECT_NE(error_of([&] { open_regular(zero, Links::follow); }).find("character device"), std::string::npos);
  EXPECT_NE(error_of([&] { open_regular(zero, Links::refuse); }).find("symbolic link"), std::string::npos);
  const fs::path real = dir / "real";
  std::ofstream(real) << "{}";
  const fs::path link = dir / "link";
  fs::create_symlink(real, link);
  EXPECT_TRUE(open_regular(link, Links::follow));
  EXPECT_NE(error_of([&] { open_regular(link, Links::refuse); }).find("symbolic link"), std::string::npos);
  EXPECT_EQ(*read_regular_at_most(real, 10), "{}");
  EXPECT_FALSE(read_regular_at_most(real, 1).has_value());
}

TEST_F(FsTest, AFolderLockIsExclusiveAndNamesItsHolder) {
  auto first = FileLock::try_lock(dir);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(FileLock::try_lock(dir).has_value());  // a second open file of the same process
  first.reset();
  EXPECT_TRUE(FileLock::try_lock(dir).has_value());

  // Held by another process: refused with its pid, and free again once it is gone (killed).
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto l = FileLock::try_lock(dir);
    char c = l ? '1' : '0';
    [[maybe_unused]] auto w = ::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  EXPECT_FALSE(FileLock::try_lock(dir).has_value());
  const std::string msg = error_of([&] { FileLock::lock(dir, "train into this run folder"); });
  EXPECT_NE(msg.find("in use by another frugal process"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pid " + std::to_string(child)), std::string::npos) << msg;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(FileLock::try_lock(dir).has_value());
}

TEST_F(FsTest, TemporaryNamesFitWhenTheNameNearlyFillsNameMax) {
  // 250 bytes: 124 two-byte characters and two ASCII ones; the cut must not split a character.
  std::string name = "a";
  for (int i = 0; i < 124; ++i) name += "\xc3\xa9";
  name += "b";
  ASSERT_EQ(name.size(), 250u);
  const fs::path temp = temp_path_for(dir / name);
  EXPECT_LE(temp.filename().string().size(), 255u);
  EXPECT_TRUE(is_temp_path(temp));
  EXPECT_EQ(temp.parent_path(), dir);
  const std::string base = temp.filename().string();
  const std::string kept = base.substr(0, base.find(kTempMarker));
  EXPECT_EQ(name.compare(0, kept.size(), kept), 0);
  EXPECT_NE(static_cast<unsigned char>(name[kept.size()]) & 0xC0, 0x80u);  // cut at a character boundary
  int fd = create_owned_temp(temp);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ::close(fd);
}

}  // namespace
}  // namespace frugal
