// libFuzzer target for the --labels options: any input must give a table of normalised ids with
// non-empty labels, the same whether the file arrives whole or in pieces, or fail with
// frugal::Error; the same bytes as a --class-names file give names or frugal::Error. Never a
// crash or another exception.
//
// Input: byte 0 picks the delimiter (bit 0) and where --label-columns comes from (bits 1-2: the
// default, "1,0", header names "id,label", or the text up to the first '\n' of the rest); byte 1
// is the piece size; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "dataset/label_sources.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace {

std::map<std::string, std::string> table(std::string_view text, char delimiter, const std::string& columns,
                                         std::size_t piece) {
  frugal::detail::CsvLabelTable t("labels.csv", delimiter, columns);
  for (std::size_t i = 0; i < text.size(); i += piece) t.feed(text.substr(i, piece));
  t.finish();
  std::map<std::string, std::string> m;
  for (const auto& [id, row] : t.rows()) {
    if (row.label >= t.labels().size()) __builtin_trap();
    m[id] = t.labels()[row.label];
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const char delimiter = (data[0] & 1) ? '\t' : ',';
  std::string columns;
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
    whole = table(text, delimiter, columns, text.size() + 1);
    whole_ok = true;
  } catch (const frugal::Error&) {}
  try {
    pieces = table(text, delimiter, columns, piece);
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
