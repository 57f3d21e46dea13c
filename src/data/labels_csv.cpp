#include "data/labels_csv.h"

#include "frugal/error.h"
#include "frugal/fs.h"

namespace frugal::detail {
namespace {

std::string_view unquote(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

bool is_header_label(std::string_view v) {
  if (v.size() != 5) return false;
  for (std::size_t i = 0; i < 5; ++i)
    if ((v[i] | 0x20) != "label"[i]) return false;
  return true;
}

}  // namespace

std::map<std::string, std::string> parse_labels_csv(std::string_view text, const std::string& where) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 BOM, as spreadsheets write
  std::map<std::string, std::string> labels;
  std::size_t line_no = 0;
  bool first = true;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string at = where + ":" + std::to_string(line_no);
    const auto comma = line.rfind(',');
    if (comma == std::string_view::npos)
      fail(ErrorKind::invalid, at, "a line of path,label", "\"" + std::string(line.substr(0, 200)) + "\"",
           "fix labels.csv");
    const std::string_view path = unquote(line.substr(0, comma)), label = unquote(line.substr(comma + 1));
    if (first && is_header_label(label)) {
      first = false;
      continue;
    }
    first = false;
    const std::string key = normalize_relative(path);
    if (key.empty())
      fail(ErrorKind::invalid, at, "a path inside the archive", "\"" + std::string(path.substr(0, 200)) + "\"",
           "fix labels.csv");
    auto [it, added] = labels.emplace(key, label);
    if (!added && it->second != label)
      fail(ErrorKind::invalid, at, "one label per path",
           "\"" + key + "\" labelled both \"" + it->second + "\" and \"" + std::string(label) + "\"", "fix labels.csv");
  }
  return labels;
}

}  // namespace frugal::detail
