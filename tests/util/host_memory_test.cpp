#include "frugal/util/host_memory.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <cstdlib>

namespace frugal {
namespace {

// Under ASan or TSan malloc is the sanitizer's, which glibc's tuning does not reach.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FRUGAL_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FRUGAL_SANITIZER_MALLOC 1
#endif
#endif

TEST(HostMemory, BlocksBelow32MiBComeFromTheHeapAndUserTuningIsLeftAlone) {
#if defined(FRUGAL_SANITIZER_MALLOC)
  GTEST_SKIP() << "the sanitizer's malloc replaces glibc's, which this tunes";
#elif defined(__GLIBC__)
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
