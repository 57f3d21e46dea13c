#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string_view>

#include "frugal/util/error.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {
namespace {

// 1, 0.5, 1e+06: the shortest text that reads back as the same number.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

bool parse_integer(const std::string& s, long long& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  try {
    std::size_t used = 0;
    out = std::stod(s, &used);
    return used == s.size() && std::isfinite(out);
  } catch (const std::exception&) {
    return false;
  }
}

std::string found(const std::string& s) { return ", found " + (s.empty() ? std::string("nothing") : s); }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool has_space(std::string_view s) { return std::any_of(s.begin(), s.end(), is_space); }
bool one_line(std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; }

// A validator from CLI11 itself ("--top: Value 0 not in range 0.000000 to 1797…") or a failed
// conversion ("Could not convert: --top = x"), said the way ours say it. Parsed by hand, not by
// std::regex: the value is the user's text (an entry name pasted in can be 64 KB), and std::regex
// recurses per character.
std::string reword(const std::string& what) {
  const std::string_view w = what;
  if (const auto value_at = w.find(": Value ");
      value_at != std::string_view::npos && value_at > 0 && !has_space(w.substr(0, value_at))) {
    const std::string_view rest = w.substr(value_at + 8);
    const auto range_at = rest.rfind(" not in range ");
    if (range_at != std::string_view::npos) {
      const std::string_view value = rest.substr(0, range_at), bounds = rest.substr(range_at + 14);
      const auto to = bounds.find(" to ");
      double lo = 0, hi = 0;
      if (one_line(value) && to != std::string_view::npos && to > 0 && to + 4 < bounds.size() &&
          !has_space(bounds.substr(0, to)) && !has_space(bounds.substr(to + 4)) &&
          parse_number(std::string(bounds.substr(0, to)), lo) && parse_number(std::string(bounds.substr(to + 4)), hi)) {
        const std::string want = hi >= 1e300 ? "a number >= " + number_text(lo)
                                             : "a number from " + number_text(lo) + " to " + number_text(hi);
        return std::string(w.substr(0, value_at)) + ": expected " + want + found(std::string(value));
      }
    }
  }
  constexpr std::string_view convert = "Could not convert: ";
  if (w.starts_with(convert)) {
    const std::string_view rest = w.substr(convert.size());
    const auto eq = rest.find(" = ");
    if (eq != std::string_view::npos && eq > 0 && !has_space(rest.substr(0, eq)) && one_line(rest.substr(eq + 3)))
      return std::string(rest.substr(0, eq)) + ": expected a number" + found(std::string(rest.substr(eq + 3)));
  }
  return what;
}

// The long option named at clause[at] ("--name", letters, digits and '-' after a first letter),
// when it starts a word there (after the start, a space or one of ( ` ' " /); else 0. Its length.
std::size_t option_at(std::string_view clause, std::size_t at) {
  if (at > 0 && !is_space(clause[at - 1]) && std::string_view("(`'\"/").find(clause[at - 1]) == std::string_view::npos)
    return 0;
  if (!clause.substr(at).starts_with("--") || at + 2 >= clause.size() || clause[at + 2] < 'a' || clause[at + 2] > 'z')
    return 0;
  std::size_t end = at + 3;
  while (end < clause.size() && ((clause[end] >= 'a' && clause[end] <= 'z') ||
                                 (clause[end] >= '0' && clause[end] <= '9') || clause[end] == '-'))
    ++end;
  return end - at;
}

// The long options of the command parse() last read (one command per process).
std::vector<std::string>& known_options() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

std::string fit_advice(const std::string& what, const std::string& command) {
  const auto& known = known_options();
  if (known.empty()) return what;
  std::string out;
  bool said = false;  // the parenthesis once per message
  std::size_t start = 0;
  while (start <= what.size()) {
    std::size_t end = what.find("; ", start);
    if (end == std::string::npos) end = what.size();
    std::string clause = what.substr(start, end - start);
    if (clause.find("frugal ") == std::string::npos) {
      std::string fixed;
      std::size_t last = 0;
      for (std::size_t at = 0; at < clause.size();) {
        const std::size_t len = option_at(clause, at);
        if (len == 0) {
          ++at;
          continue;
        }
        const std::string name = clause.substr(at, len);
        const std::size_t after = at + len;
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          fixed.append(clause, last, at - last);
          fixed += name.substr(2);
          if (!said) {
            const bool in_parens = at > 0 && clause[at - 1] == '(' && after < clause.size() && clause[after] == ')';
            fixed +=
                (in_parens ? ", " : " (") + std::string("not an option of frugal ") + command + (in_parens ? "" : ")");
          }
          said = true;
          last = after;
        }
        at = after;
      }
      fixed.append(clause, last, std::string::npos);
      clause = fixed;
    }
    out += clause;
    if (end == what.size()) break;
    out += "; ";
    start = end + 2;
  }
  return out;
}

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    // The arguments quoted in it are the user's, pasted from names in data: escaped.
    std::cerr << "frugal " << app.get_name() << ": " << printable(reword(e.what())) << "\n"
              << "Run 'frugal " << app.get_name() << " --help' for the options.\n";
    return 2;
  }
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) known_options().push_back("--" + n);
  return -1;
}

void print_json(const nlohmann::json& doc) { std::cout << json_text(doc, 2) << std::endl; }

CLI::Validator integer_in(long long lo, long long hi) {
  const std::string want = hi == LLONG_MAX ? "an integer >= " + std::to_string(lo)
                                           : "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        long long v = 0;
        if (!parse_integer(s, v) || v < lo || v > hi) return "expected " + want + found(s);
        return {};
      },
      want);
}

CLI::Validator at_least(long long min) { return integer_in(min, LLONG_MAX); }

CLI::Validator number_at_least(double min, bool exclusive) {
  const std::string want = std::string("a number ") + (exclusive ? "> " : ">= ") + number_text(min);
  return CLI::Validator(
      [min, exclusive, want](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, v) || v < min || (exclusive && v == min)) return "expected " + want + found(s);
        return {};
      },
      want);
}

CLI::Validator number_in(double lo, double hi) {
  const std::string want = "a number from " + number_text(lo) + " to " + number_text(hi);
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, v) || v < lo || v > hi) return "expected " + want + found(s);
        return {};
      },
      want);
}

CLI::Validator probability() {
  const std::string want = "a probability above 0 and below 1";
  return CLI::Validator(
      [want](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, v) || !(v > 0 && v < 1)) return "expected " + want + found(s);
        return {};
      },
      want);
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [choices, list](std::string& s) -> std::string {
        for (const auto& c : choices)
          if (s == c) return {};
        return "expected one of " + list + found(s);
      },
      "one of " + list);
}

CLI::Validator valid_size() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_size(s);
          return {};
        } catch (const Error&) {
          return "expected a size such as 512K, 1000M, 1.5G, 5GiB or 5GB" + found(s) +
                 "; K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB powers of 1000";
        }
      },
      "SIZE");
}

void add_max_file_bytes_option(CLI::App& app, std::uint64_t& bytes, const std::string& what) {
  app.add_option_function<std::string>(
         "--max-file-bytes", [&bytes](const std::string& text) { bytes = parse_size(text); },
         "an image or .npy file larger than this is never read, by the size its folder or archive lists: " + what +
             " (default 256M; K/M/G are powers of 1024)")
      ->check(valid_size())
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              return parse_size(s) > 0 ? std::string() : "expected a size above 0" + found(s);
            } catch (const Error&) {
              return {};  // valid_size() says it
            }
          },
          ""));
}

CLI::Validator valid_duration() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_duration(s);
          return {};
        } catch (const Error&) {
          return "expected a duration such as 90s, 30m, 7h30m or 8h" + found(s);
        }
      },
      "DURATION");
}

}  // namespace frugal::cli
