#include "frugal/host_memory.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <cstdlib>

namespace frugal {
namespace {

TEST(HostMemory, BlocksBelow32MiBComeFromTheHeapAndUserTuningIsLeftAlone) {
#if defined(__GLIBC__)
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1);
  EXPECT_FALSE(keep_freed_host_memory());
  ::unsetenv("GLIBC_TUNABLES");
  ::setenv("MALLOC_ARENA_MAX", "2", 1);
  EXPECT_FALSE(keep_freed_host_memory());
  ::unsetenv("MALLOC_ARENA_MAX");
  ASSERT_TRUE(keep_freed_host_memory());
  // glibc's default (128 KiB, adaptive up to 32 MiB) would map a 24 MiB block on its own.
  const int mapped_before = mallinfo2().hblks;
  void* block = std::malloc(24 << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  std::free(block);
#else
  GTEST_SKIP() << "glibc only";
#endif
}

}  // namespace
}  // namespace frugal
