// libFuzzer target for the --labels options: any input must give a table of normalised ids with
// non-empty labels, the same whether the file arrives whole or in pieces, or fail with
// frugal::Error; the same bytes as a --class-names file give names or frugal::Error. Never a
// crash or another exception.
//
// Input: byte 0 picks the delimiter (bit 0), where --label-columns comes from (bits 1-2: the
// default, "1,0", header names "id,label", or the text up to the first '\n' of the rest), tag lists
// split on ' ' (bit 3, --label-separator) and --labels-header (bits 4-5: auto, yes, no, auto);
// byte 1 is the piece size; the rest is the file. Multi-label tables (a separator, or 0/1 columns
// from "0,*" / "ID,A,B") must give non-empty, distinct tag names and rows whose tag sets are
// sorted indices of them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "dataset/label_sources.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace {

// id -> label, or for multi-label tables its tags joined by '\n' after a '\n' (so never "").
std::map<std::string, std::string> table(std::string_view text, char delimiter,
                                         const frugal::detail::CsvLabelFormat& format, std::size_t piece) {
  frugal::detail::CsvLabelTable t("labels.csv", delimiter, format);
  for (std::size_t i = 0; i < text.size(); i += piece) t.feed(text.substr(i, piece));
  t.finish();
  if (t.multi_label()) {
    const std::set<std::string> names(t.labels().begin(), t.labels().end());
    if (names.size() != t.labels().size() || names.count("")) __builtin_trap();
  }
  std::map<std::string, std::string> m;
  for (const auto& [id, row] : t.rows()) {
    if (!t.multi_label()) {
      if (row.label >= t.labels().size()) __builtin_trap();
      m[id] = t.labels()[row.label];
      continue;
    }
    if (row.label >= t.tag_sets().size()) __builtin_trap();
    const auto& set = t.tag_sets()[row.label];
    if (!std::is_sorted(set.begin(), set.end()) || std::adjacent_find(set.begin(), set.end()) != set.end())
      __builtin_trap();
    std::string tags = "\n";
    for (const std::uint32_t k : set) {
      if (k >= t.labels().size()) __builtin_trap();
      tags += t.labels()[k] + "\n";
    }
    m[id] = tags;
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const char delimiter = (data[0] & 1) ? '\t' : ',';
  frugal::detail::CsvLabelFormat format;
  format.separator = (data[0] & 8) ? " " : "";
  format.header = ((data[0] >> 4) & 3) == 1 ? "yes" : ((data[0] >> 4) & 3) == 2 ? "no" : "auto";
  std::string& columns = format.columns;
  switch ((data[0] >> 1) & 3) {
    case 1:
      columns = "1,0";
      break;
    case 2:
      columns = "id,label";
      break;
    case 3: {
      const auto nl = text.find('\n');
      columns = std::string(text.substr(0, nl));
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      break;
    }
    default:
      break;
  }
  const std::size_t piece = 1 + data[1];
  bool whole_ok = false, pieces_ok = false;
  std::map<std::string, std::string> whole, pieces;
  try {
    whole = table(text, delimiter, format, text.size() + 1);
    whole_ok = true;
  } catch (const frugal::Error&) {}
  try {
    pieces = table(text, delimiter, format, piece);
    pieces_ok = true;
  } catch (const frugal::Error&) {}
  if (whole_ok != pieces_ok || whole != pieces) __builtin_trap();
  for (const auto& [id, label] : whole)
    if (id.empty() || label.empty() || frugal::normalize_relative(id) != id) __builtin_trap();
  try {
    const auto names = frugal::detail::parse_class_names(text, "names.json");
    for (const auto& [label, name] : names)
      if (label < 0 || name.empty()) __builtin_trap();
  } catch (const frugal::Error&) {}
  return 0;
}
