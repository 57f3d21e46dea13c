#include "config_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <system_error>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal::cli {
namespace {

constexpr std::size_t kMaxConfigBytes = 1 << 20;

bool is_option_name(const std::string& k) {
  if (k.empty() || k.size() > 64 || !(k[0] >= 'a' && k[0] <= 'z')) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

// Shortest text that reads back as the same double: std::to_string(1e-7) would say "0.000000".
std::string number_text(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(d);
}

std::string at(const std::string& where, const toml::node& n) {
  const auto& src = n.source();
  return src.begin.line ? where + ":" + std::to_string(src.begin.line) : where;
}

}  // namespace

std::vector<std::string> config_args_from_toml(std::string_view text, const std::string& where,
                                               const std::vector<std::string>& flags) {
  toml::table table;
  try {
    table = toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    fail(ErrorKind::invalid, where + ":" + std::to_string(b.line) + ":" + std::to_string(b.column), "a TOML file",
         std::string(e.description()), "fix the line it names");
  }
  std::vector<std::string> args;
  for (auto& [key, node] : table) {
    std::string name(key.str());
    for (auto& ch : name)
      if (ch == '_') ch = '-';
    if (!is_option_name(name) || name == "config")
      fail(ErrorKind::invalid, at(where, node), "keys that are long options of frugal train (batch-size = 32)",
           "\"" + std::string(key.str()).substr(0, 64) + "\"", "see frugal train --help");
    const bool flag = std::find(flags.begin(), flags.end(), name) != flags.end();
    // "--key=value" keeps a value that starts with '-' a value.
    auto add = [&](const toml::node& v) {
      std::string value;
      if (auto s = v.value_exact<std::string>())
        value = *s;
      else if (auto i = v.value_exact<std::int64_t>())
        value = std::to_string(*i);
      else if (auto d = v.value_exact<double>())
        value = number_text(*d);
      else if (auto b = v.value_exact<bool>())
        fail(ErrorKind::invalid, at(where, v),
             flag ? "one true or false for '" + name + "'"
                  : "a value for '" + name + "' (a string or a number, as on the command line: --" + name + " VALUE)",
             std::string(*b ? "true" : "false") + (flag ? " in an array" : ""),
             flag ? "write " + name + " = true"
                  : "only options that take no value (such as fresh) are set with true or false");
      else
        fail(ErrorKind::invalid, at(where, v), "a string, number or boolean for '" + name + "'",
             v.is_table()   ? "a table"
             : v.is_array() ? "an array inside an array"
                            : "a date or time",
             "");
      if (value.find('\0') != std::string::npos)
        fail(ErrorKind::invalid, at(where, v), "a value for '" + name + "' without NUL bytes", "one", "");
      args.push_back("--" + name + "=" + value);
    };
    if (node.is_boolean() && flag) {
      if (*node.value_exact<bool>()) args.push_back("--" + name);
    } else if (auto* arr = node.as_array()) {
      for (auto& v : *arr) add(v);
    } else {
      add(node);
    }
  }
  return args;
}

std::vector<std::string> config_args(const std::string& file, const std::vector<std::string>& flags) {
  auto text = read_file_at_most(file, kMaxConfigBytes);
  if (!text)
    fail(ErrorKind::invalid, file, "a TOML file of at most 1 MiB", "a larger file", "give the train options' file");
  return config_args_from_toml(*text, file, flags);
}

}  // namespace frugal::cli
