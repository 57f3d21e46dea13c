// What a call threw, for tests that hold frugal's error messages to what they should say.
#pragma once

#include <functional>
#include <string>

#include "frugal/util/error.h"

namespace frugal::testing {

// The message of the frugal::Error that `f` threw, and its kind in *kind; "" when it threw nothing.
inline std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

// Whether `text` holds `part`.
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace frugal::testing
