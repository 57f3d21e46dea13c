// One small error type for all of frugal. The CLI maps each kind to an exit code (see CLI.md).
#pragma once

#include <stdexcept>
#include <string>

#include "frugal/util/settings_text.h"

namespace frugal {

enum class ErrorKind {
  usage,        // bad option or argument                      -> exit 2
  invalid,      // bad or unsafe input: corrupt, traversal...  -> exit 3
  unsupported,  // input we understand but cannot handle        -> exit 3
  budget,       // a budget would be exceeded; nothing changed  -> exit 4
  io,           // I/O or internal failure                      -> exit 1
  interrupted,  // stopped early but resumable                  -> exit 75
};

// Messages follow one shape so users can act on them:
//   "<file>[:<entry>]: expected <what>, found <what>; <what to do>"
// Build them with frugal::message() where that fits.
class Error : public std::runtime_error {
 public:
  // A setting named "{key}" in `what` is spelled for the user (settings_text.h).
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(spell_settings(what)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

int exit_code(ErrorKind kind);

// "<where>: expected <expected>, found <found>; <hint>" (parts left empty are omitted).
std::string message(const std::string& where, const std::string& expected, const std::string& found,
                    const std::string& hint);

[[noreturn]] void fail(ErrorKind kind, const std::string& where, const std::string& expected, const std::string& found,
                       const std::string& hint);

// Throws ErrorKind::io with strerror(err) and a hint for the common errno values.
[[noreturn]] void fail_errno(const std::string& what, const std::string& path, int err);

}  // namespace frugal
