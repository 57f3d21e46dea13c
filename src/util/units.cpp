#include "frugal/util/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "frugal/util/error.h"

namespace frugal {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

[[noreturn]] void bad_size(std::string_view text) {
  fail(ErrorKind::usage, "size '" + std::string(text) + "'",
       "a number with an optional unit (512K, 1000M, 1.5G, 5GiB, 5GB)", "something else",
       "K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB powers of 1000");
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) bad_size(text);
  double number = 0;
  try {
    std::size_t used = 0;
    number = std::stod(std::string(text.substr(0, i)), &used);
    if (used != i) bad_size(text);
  } catch (const std::logic_error&) {
    bad_size(text);
  }
  std::string unit = lower(text.substr(i));
  if (!unit.empty() && unit.back() == 'b' && unit != "b" && unit.size() == 2) {
    // "kb", "mb", ...: powers of 1000
  }
  double mult = 1;
  static const char* const prefixes = "kmgt";
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else {
    auto p = std::string_view(prefixes).find(unit[0]);
    if (p == std::string_view::npos) bad_size(text);
    std::string rest = unit.substr(1);
    double base;
    if (rest.empty() || rest == "ib")
      base = 1024;
    else if (rest == "b")
      base = 1000;
    else
      bad_size(text);
    mult = std::pow(base, static_cast<double>(p + 1));
  }
  double bytes = number * mult;
  if (!std::isfinite(bytes) || bytes > 1.8e19) bad_size(text);
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::chrono::seconds parse_duration(std::string_view text) {
  auto bad = [&]() {
    fail(ErrorKind::usage, "duration '" + std::string(text) + "'",
         "hours, minutes and seconds such as 90s, 30m, 7h30m, 8h", "something else", "");
  };
  if (text.empty()) bad();
  std::int64_t total = 0;
  std::size_t i = 0;
  bool any_unit = false;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) bad();
    std::int64_t n = std::stoll(std::string(text.substr(start, i - start)));
    if (i == text.size()) {
      if (any_unit) bad();  // "1h30" is ambiguous
      total += n;
      break;
    }
    char u = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i++])));
    switch (u) {
      case 'h':
        total += n * 3600;
        break;
      case 'm':
        total += n * 60;
        break;
      case 's':
        total += n;
        break;
      case 'd':
        total += n * 86400;
        break;
      default:
        bad();
    }
    any_unit = true;
  }
  return std::chrono::seconds(total);
}

std::string format_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : (v < 100 ? "%.1f %s" : "%.0f %s"), v, units[u]);
  return buf;
}

std::string format_duration(std::chrono::seconds d) {
  auto s = d.count();
  if (s < 0) s = 0;
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s % 3600 >= 60) out += std::to_string((s % 3600) / 60) + "m";
  if (s % 60 || out.empty()) out += std::to_string(s % 60) + "s";
  return out;
}

std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural) {
  std::string word(singular);
  if (n != 1) {
    auto ends = [&](std::string_view tail) {
      return word.size() >= tail.size() && word.compare(word.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (!plural.empty())
      word = plural;
    else if (ends("s") || ends("x") || ends("ch") || ends("sh"))
      word += "es";
    else if (ends("y") && word.size() > 1 &&
             std::string_view("aeiou").find(word[word.size() - 2]) == std::string_view::npos)
      word.back() = 'i', word += "es";
    else
      word += "s";
  }
  return std::to_string(n) + " " + word;
}

std::string format_percent(double fraction, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, 100.0 * fraction);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s + "%";
}

}  // namespace frugal
