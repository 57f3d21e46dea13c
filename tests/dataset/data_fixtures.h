// Archives made by tests/dataset/make_archives.py once per build tree (again when it changes).
#pragma once

#include "image/fixtures.h"

namespace frugal::testing {

inline std::filesystem::path data_fixtures() { return fixtures_made_by("tests/dataset/make_archives.py", "data"); }

}  // namespace frugal::testing
