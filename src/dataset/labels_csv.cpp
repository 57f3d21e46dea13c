#include "dataset/labels_csv.h"

#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/units.h"

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

void check_class_name_length(std::string_view name, const std::string& where) {
  if (name.size() <= kMaxClassNameBytes) return;
  fail(ErrorKind::invalid, where, "a class name of at most " + std::to_string(kMaxClassNameBytes) + " bytes",
       "one of " + std::to_string(name.size()) + " bytes", "shorten it in the file");
}

void LabelsCsvParser::too_long() const {
  fail(ErrorKind::invalid, where_ + ":" + std::to_string(line_no_ + 1),
       "lines of at most " + format_size(kMaxLabelsLine) + " (a path inside the archive, a comma, a label)",
       "a longer one", "fix labels.csv");
}

void LabelsCsvParser::feed(std::string_view bytes) {
  bytes_ += bytes.size();
  if (bytes_ > kMaxLabelsCsvBytes)
    fail(ErrorKind::invalid, where_, "a labels.csv of at most " + format_size(kMaxLabelsCsvBytes), "a larger file",
         "split the labels over class folders, or shorten the file");
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (partial_.size() + piece.size() > kMaxLabelsLine) too_long();
    if (nl == std::string_view::npos) {
      partial_.append(piece);
      return;
    }
    if (partial_.empty()) {
      line(piece);
    } else {
      partial_.append(piece);
      line(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

std::map<std::string, std::string> LabelsCsvParser::finish() {
  if (!partial_.empty()) {
    line(partial_);
    partial_.clear();
  }
  return std::move(labels_);
}

void LabelsCsvParser::line(std::string_view line) {
  if (line_no_++ == 0 && line.substr(0, 3) == "\xEF\xBB\xBF")
    line.remove_prefix(3);  // a UTF-8 BOM, as spreadsheets write
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;
  const std::string at = where_ + ":" + std::to_string(line_no_);
  const auto comma = line.rfind(',');
  if (comma == std::string_view::npos)
    fail(ErrorKind::invalid, at, "a line of path,label", "\"" + std::string(line.substr(0, 200)) + "\"",
         "fix labels.csv");
  const std::string_view path = unquote(line.substr(0, comma)), label = unquote(line.substr(comma + 1));
  if (first_ && is_header_label(label)) {
    first_ = false;
    return;
  }
  first_ = false;
  check_class_name_length(label, at);
  const std::string key = normalize_relative(path);
  if (key.empty())
    fail(ErrorKind::invalid, at, "a path inside the archive", "\"" + std::string(path.substr(0, 200)) + "\"",
         "fix labels.csv");
  auto [it, added] = labels_.emplace(key, label);
  if (!added && it->second != label)
    fail(ErrorKind::invalid, at, "one label per path",
         "\"" + key + "\" labelled both \"" + it->second + "\" and \"" + std::string(label) + "\"", "fix labels.csv");
}

std::map<std::string, std::string> parse_labels_csv(std::string_view text, const std::string& where) {
  LabelsCsvParser parser(where);
  parser.feed(text);
  return parser.finish();
}

}  // namespace frugal::detail
