// Test helpers for tars: headers built byte by byte (so that hostile tests can set every field and
// checksum), and Python (.venv) as the independent writer and reader the readers are held to.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "reference_python.h"

namespace frugal::testing {

// ---- Python ----
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `code` with `args`; returns its stdout. Fails the test (and returns nullopt) when it exits
// non-zero; stderr goes to the test's output.
inline std::optional<std::string> run_python(const std::string& code, const std::vector<std::string>& args,
                                             const std::filesystem::path& dir) {
  const std::filesystem::path script = dir / "script.py";
  std::ofstream(script) << code;
  std::string cmd = python_or_python3() + " " + shell_quote(script.string());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << "python failed: " << cmd << "\n" << out.substr(0, 2000);
  if (rc != 0) return std::nullopt;
  return out;
}

// Skips the test when Python lacks a module (a machine without .venv's packages).
#define FRUGAL_NEED_PYTHON_MODULE(module)                                                                           \
  do {                                                                                                              \
    if (std::system((frugal::testing::python_or_python3() +                                                         \
                     " -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"" module "\") is None)'" \
                     " >/dev/null 2>&1")                                                                            \
                        .c_str()) != 0)                                                                             \
      GTEST_SKIP() << "python module " module " is not installed (scripts/setup.sh installs it)";                   \
  } while (0)

// The names of an archive's entries, in its order.
inline std::vector<std::string> names_of(const Archive& a) {
  std::vector<std::string> out;
  for (const auto& e : a.entries()) out.push_back(e.name);
  return out;
}

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- tar bytes ----
struct TarHeader {
  std::string name;
  char type = '0';
  std::uint64_t size = 0;
  std::string link;
  std::string prefix;                   // ustar prefix field
  bool gnu_magic = false;               // "ustar  \0" rather than "ustar\0" "00"
  bool v7 = false;                      // no magic at all
  std::optional<std::string> raw_size;  // the size field's 12 bytes as given
  std::optional<int> checksum_delta;    // added to the right checksum
  char gnu_isextended = 0;              // byte 482 (old GNU sparse)
};

inline std::string tar_header(const TarHeader& h) {
  std::string b(512, '\0');
  auto put = [&](std::size_t at, const std::string& s, std::size_t n) {
    b.replace(at, std::min(n, s.size()), s.substr(0, n));
  };
  auto octal = [](std::uint64_t v, std::size_t width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  put(0, h.name, 100);
  put(100, octal(0644, 8), 7);
  put(108, octal(0, 8), 7);
  put(116, octal(0, 8), 7);
  if (h.raw_size)
    b.replace(124, 12,
              h.raw_size->substr(0, 12) + std::string(12 - std::min<std::size_t>(12, h.raw_size->size()), '\0'));
  else
    put(124, octal(h.size, 12), 11);
  put(136, octal(0, 12), 11);
  b[156] = h.type;
  put(157, h.link, 100);
  if (!h.v7) {
    if (h.gnu_magic)
      put(257, std::string("ustar  \0", 8), 8);
    else
      put(257,
          std::string("ustar\0"
                      "00",
                      8),
          8);
    put(345, h.prefix, 155);
  }
  b[482] = h.gnu_isextended;
  b.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : b) sum += c;
  if (h.checksum_delta) sum += static_cast<unsigned>(*h.checksum_delta);
  b.replace(148, 8, octal(sum, 7) + std::string("\0 ", 2));  // six digits, NUL, space (as GNU tar writes it)
  return b;
}

inline std::string tar_pad(const std::string& data) {
  return data + std::string((512 - data.size() % 512) % 512, '\0');
}

// A member: header and padded data.
inline std::string tar_member(TarHeader h, const std::string& data) {
  if (!h.raw_size && h.size == 0) h.size = data.size();
  return tar_header(h) + tar_pad(data);
}

inline std::string tar_file(const std::string& name, const std::string& data) { return tar_member({name, '0'}, data); }

inline std::string pax_record(const std::string& key, const std::string& value) {
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t len = body.size() + 1;
  while (std::to_string(len).size() + body.size() != len) ++len;
  return std::to_string(len) + body;
}

inline std::string tar_end() { return std::string(1024, '\0'); }

}  // namespace frugal::testing
