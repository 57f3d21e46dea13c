// Weak fallbacks for commands whose implementation is not linked into this build yet. A real
// definition in cmd_<name>.cpp / torch_cmd_<name>.cpp replaces its fallback at link time. Each
// fallback fails loudly (exit 1); none pretends to work.
#include <cstdio>

#include "commands.h"

namespace frugal::cli {
namespace {
int not_built(const char* name) {
  std::fprintf(stderr, "frugal %s: not available in this build of frugal yet\n", name);
  return 1;
}
}  // namespace

#define FRUGAL_FALLBACK(n) \
  __attribute__((weak)) int cmd_##n(int, char**) { return not_built(#n); }
FRUGAL_FALLBACK(pack)
FRUGAL_FALLBACK(split)
FRUGAL_FALLBACK(join)
FRUGAL_FALLBACK(verify)
FRUGAL_FALLBACK(ls)
FRUGAL_FALLBACK(extract)
FRUGAL_FALLBACK(du)
FRUGAL_FALLBACK(clean)
FRUGAL_FALLBACK(doctor)
FRUGAL_FALLBACK(train)
FRUGAL_FALLBACK(eval)
FRUGAL_FALLBACK(predict)
FRUGAL_FALLBACK(compress)
FRUGAL_FALLBACK(export)
FRUGAL_FALLBACK(bench)

}  // namespace frugal::cli
