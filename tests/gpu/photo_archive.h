// The archive of photos the GPU tests decode: made by tests/gpu/make_photo_archive.py (the
// project's Python, PIL) into the build tree the first time a test asks for it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "frugal/dataset/dataset.h"
#include "image/fixtures.h"

namespace frugal::testing {

// The photo archive as a Dataset; nullptr when it cannot be made (no Python with PIL).
inline std::shared_ptr<Dataset> photos() {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(FRUGAL_BINARY_DIR) / "test-fixtures/gpu";
  fs::path zip = dir / "photos.zip";
  if (!fs::exists(zip)) {
    fs::create_directories(dir);
    fs::path tmp = dir / ("photos.zip.tmp." + std::to_string(::getpid()));
    if (!run_python("tests/gpu/make_photo_archive.py", tmp.string())) return nullptr;
    fs::rename(tmp, zip);
  }
  return Dataset::open(zip);
}

}  // namespace frugal::testing
