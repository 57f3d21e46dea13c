#include "frugal/util/host_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace frugal {

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "malloc")) return false;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "MALLOC_", 7) == 0) return false;
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace frugal
