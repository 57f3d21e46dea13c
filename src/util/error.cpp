#include "frugal/util/error.h"
#include "frugal/util/checked.h"
#include "frugal/util/settings_text.h"

#include <cerrno>
#include <cstring>

namespace frugal {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return 2;
    case ErrorKind::invalid:
    case ErrorKind::unsupported:
      return 3;
    case ErrorKind::budget:
      return 4;
    case ErrorKind::interrupted:
      return 75;
    case ErrorKind::io:
      return 1;
  }
  return 1;
}

std::string message(const std::string& where, const std::string& expected, const std::string& found,
                    const std::string& hint) {
  std::string m = where;
  auto add = [&m](const char* sep, const std::string& part) {
    if (part.empty()) return;
    if (!m.empty()) m += sep;
    m += part;
  };
  add(": ", expected.empty() ? "" : "expected " + expected);
  add(expected.empty() ? ": " : ", ", found.empty() ? "" : "found " + found);
  add("; ", hint);
  return spell_settings(m);
}

void fail(ErrorKind kind, const std::string& where, const std::string& expected, const std::string& found,
          const std::string& hint) {
  throw Error(kind, message(where, expected, found, hint));
}

void fail_errno(const std::string& what, const std::string& path, int err) {
  std::string hint;
  ErrorKind kind = ErrorKind::io;
  switch (err) {
    case ENOENT:
      hint = "check the path";
      kind = ErrorKind::usage;
      break;
    case EACCES:
    case EPERM:
      hint = "check the file's permissions";
      break;
    case ENOSPC:
    case EDQUOT:
      hint = "free disk space (frugal du, frugal clean) and run again";
      break;
    case EISDIR:
      hint = "give a file, not a folder";
      kind = ErrorKind::usage;
      break;
    case ENOTDIR:
      hint = "a folder on the path is a file";
      kind = ErrorKind::usage;
      break;
    default:
      break;
  }
  throw Error(kind, message(path, "", "", what + " failed: " + std::strerror(err) + (hint.empty() ? "" : "; " + hint)));
}

}  // namespace frugal

namespace frugal {

void fail_overflow(const std::string& where, const std::string& what) {
  fail(ErrorKind::invalid, where, what + " that fits in 64 bits", "numbers whose sum or product overflows",
       "the file is damaged or crafted");
}

}  // namespace frugal
