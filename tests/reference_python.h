// The Python that runs the tests' independent reference implementations: the project's .venv (with
// PIL, torch, pyarrow, ...) unless FRUGAL_PYTHON names another. Three ways to find it, as the tests
// have always looked for it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace frugal::testing {

// The .venv's python of the source tree (which may not exist).
inline std::filesystem::path venv_python() {
  return std::filesystem::path(FRUGAL_SOURCE_DIR) / ".venv" / "bin" / "python";
}

// FRUGAL_PYTHON when it is set (even to nothing), else the .venv's python when it exists, else
// nothing: an empty string means that there is no Python to run.
inline std::string python() {
  if (const char* p = std::getenv("FRUGAL_PYTHON")) return p;
  return std::filesystem::exists(venv_python()) ? venv_python().string() : "";
}

// FRUGAL_PYTHON when it is set and not empty, else the .venv's python when it exists, else python3
// from PATH.
inline std::string python_or_python3() {
  if (const char* p = std::getenv("FRUGAL_PYTHON"); p && *p) return p;
  return std::filesystem::exists(venv_python()) ? venv_python().string() : "python3";
}

// The .venv's python when it exists, else python3 from PATH (FRUGAL_PYTHON is not asked).
inline std::string venv_python_or_python3() {
  return std::filesystem::exists(venv_python()) ? venv_python().string() : "python3";
}

}  // namespace frugal::testing
