#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <regex>

#include "frugal/error.h"
#include "frugal/units.h"

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

// A validator from CLI11 itself ("Value 0 not in range 0.000000 to 1797…") or a failed conversion
// ("Could not convert: --top = x"), said the way ours say it.
std::string reword(const std::string& what) {
  static const std::regex range(R"(^(\S+): Value (.*) not in range (\S+) to (\S+)$)");
  static const std::regex convert(R"(^Could not convert: (\S+) = (.*)$)");
  std::smatch m;
  if (std::regex_match(what, m, range)) {
    double lo = 0, hi = 0;
    if (parse_number(m[3], lo) && parse_number(m[4], hi)) {
      const std::string want = hi >= 1e300 ? "a number >= " + number_text(lo)
                                            : "a number from " + number_text(lo) + " to " + number_text(hi);
      return m[1].str() + ": expected " + want + found(m[2]);
    }
  }
  if (std::regex_match(what, m, convert)) return m[1].str() + ": expected a number" + found(m[2]);
  return what;
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
  static const std::regex option(R"((^|[\s(`'"/])(--[a-z][a-z0-9-]*))");
  std::string out;
  bool said = false;  // the parenthesis once per message
  std::size_t start = 0;
  while (start <= what.size()) {
    std::size_t end = what.find("; ", start);
    if (end == std::string::npos) end = what.size();
    std::string clause = what.substr(start, end - start);
    if (clause.find("frugal ") == std::string::npos) {
      std::string fixed;
      auto last = clause.cbegin();
      for (std::sregex_iterator it(clause.begin(), clause.end(), option), stop; it != stop; ++it) {
        const std::string name = (*it)[2];
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        fixed.append(last, (*it)[2].first);
        fixed += name.substr(2);
        if (!said) {
          const bool in_parens = (*it)[1] == "(" && (*it)[2].second != clause.cend() && *(*it)[2].second == ')';
          fixed += (in_parens ? ", " : " (") + std::string("not an option of frugal ") + command + (in_parens ? "" : ")");
        }
        said = true;
        last = (*it)[2].second;
      }
      fixed.append(last, clause.cend());
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
    std::cerr << "frugal " << app.get_name() << ": " << reword(e.what()) << "\n"
              << "Run 'frugal " << app.get_name() << " --help' for the options.\n";
    return 2;
  }
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) known_options().push_back("--" + n);
  return -1;
}

void print_json(const nlohmann::json& doc) { std::cout << doc.dump(2) << std::endl; }

bool stdout_is_tty() { return ::isatty(1) == 1; }

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
