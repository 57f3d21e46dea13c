// Class weights for imbalanced data (training/class_weights.h).
#include "frugal/training/class_weights.h"

#include <cmath>
#include <map>
#include <sstream>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/terminal.h"

namespace frugal {
namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

std::vector<double> balanced_class_weights(const std::vector<std::int64_t>& counts) {
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  std::vector<double> w;
  const double k = static_cast<double>(counts.size());
  for (std::int64_t c : counts) w.push_back(c > 0 ? static_cast<double>(total) / (k * static_cast<double>(c)) : 0.0);
  return w;
}

std::vector<double> read_class_weights(const std::string& file, const std::vector<std::string>& classes) {
  constexpr std::uint64_t kMaxBytes = 16u << 20;
  const std::optional<std::string> text = read_file_at_most(file, kMaxBytes);
  if (!text) fail(ErrorKind::invalid, file, "a class weights file of at most 16 MiB", "a larger file", "");
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < classes.size(); ++i) index.emplace(classes[i], i);
  std::vector<double> w(classes.size(), std::nan(""));
  std::istringstream in(*text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trimmed(line);
    const std::string where = file + ":" + std::to_string(n);
    if (line.empty() || line[0] == '#') continue;
    const auto comma = line.rfind(',');
    if (comma == std::string::npos)
      fail(ErrorKind::invalid, where, "CLASS,WEIGHT", "\"" + printable(line) + "\"", "one class and its weight a line");
    const std::string name = trimmed(line.substr(0, comma)), value = trimmed(line.substr(comma + 1));
    if (n == 1 && name == "class" && value == "weight") continue;  // the header
    const auto it = index.find(name);
    if (it == index.end())
      fail(ErrorKind::invalid, where, "one of the data's classes", "\"" + printable(name) + "\"",
           "name the classes as the data does (frugal ls DATA shows them)");
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
      fail(ErrorKind::invalid, where, "a weight: a finite number >= 0", "\"" + printable(value) + "\"", "");
    if (!std::isnan(w[it->second]))
      fail(ErrorKind::invalid, where, "each class once", "\"" + printable(name) + "\" again", "");
    w[it->second] = v;
  }
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (std::isnan(w[i]))
      fail(ErrorKind::invalid, file, "a weight for every class of the data",
           "none for \"" + printable(classes[i]) + "\"", "add a line `" + printable(classes[i]) + ",1`");
  return w;
}

std::vector<double> class_weights(const std::string& spec, const std::vector<std::string>& classes,
                                  const std::vector<std::int64_t>& counts) {
  return spec == "auto" ? balanced_class_weights(counts) : read_class_weights(spec, classes);
}

}  // namespace frugal
