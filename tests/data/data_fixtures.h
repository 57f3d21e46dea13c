// Archives made by tests/data/make_archives.py once per build tree (again when it changes).
#pragma once

#include "image/fixtures.h"

namespace frugal::testing {

inline std::filesystem::path data_fixtures() {
  namespace fs = std::filesystem;
  const char* script = "tests/data/make_archives.py";
  fs::path dir = fs::path(FRUGAL_BINARY_DIR) / "test-fixtures/data";
  fs::path stamp = dir / "done", src = fs::path(FRUGAL_SOURCE_DIR) / script;
  std::error_code ec;
  if (fs::exists(stamp) && fs::last_write_time(stamp, ec) >= fs::last_write_time(src, ec)) return dir;
  fs::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
  if (!run_python(script, tmp.string())) return {};
  std::ofstream(tmp / "done") << "ok\n";
  if (fs::exists(stamp)) remove_tree(dir);
  fs::rename(tmp, dir, ec);
  if (ec) remove_tree(tmp);
  return dir;
}

}  // namespace frugal::testing
