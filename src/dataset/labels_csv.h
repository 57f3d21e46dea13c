// labels.csv inside a training archive: `path,label` lines, an optional `path,label` header row.
// Torch-free, as the whole dataset library is: the fuzz target (fuzz/labels.cmake) links that library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace frugal::detail {

// The longest line read: a path is a zip entry name (at most 64 KiB), then a comma and a label.
inline constexpr std::size_t kMaxLabelsLine = std::size_t{80} << 10;
// The largest labels.csv read: a million 250-byte lines. Its table is what stays in memory.
inline constexpr std::uint64_t kMaxLabelsCsvBytes = std::uint64_t{256} << 20;
// The longest class name, whatever its source (labels.csv, {labels} CSVs, {class_names}): a class
// name is a column header of a submission and a line of every table frugal prints.
inline constexpr std::size_t kMaxClassNameBytes = 4096;

// Error(invalid) naming `where` ("FILE:LINE") when `name` is longer than kMaxClassNameBytes.
void check_class_name_length(std::string_view name, const std::string& where);

// Reads labels.csv as it arrives, in pieces of any size (Archive::read_to's), so memory is one
// line plus the table however the file is shaped: a line past kMaxLabelsLine, or a file past
// kMaxLabelsCsvBytes, is refused as soon as it is seen (a file that inflated to one 1 GiB line was
// read whole before).
//
// The table: path (normalised as normalize_relative does, so "./d/f.jpg" names "d/f.jpg") ->
// label. The label is what follows the last comma, so paths may hold commas; either field may be
// quoted whole ("..."). Throws Error(invalid) naming "<where>:<line>" for a line without a comma,
// a path that cannot name an entry (empty, absolute, "..", NUL) or one path given two different
// labels.
class LabelsCsvParser {
 public:
  explicit LabelsCsvParser(std::string where) : where_(std::move(where)) {}
  void feed(std::string_view bytes);
  std::map<std::string, std::string> finish();  // takes a last line without a newline

 private:
  void line(std::string_view line);
  [[noreturn]] void too_long() const;

  std::string where_;
  std::string partial_;  // the line begun but not ended by the pieces fed so far
  std::uint64_t bytes_ = 0;
  std::size_t line_no_ = 0;
  bool first_ = true;  // no line with a comma read yet (a header may come)
  std::map<std::string, std::string> labels_;
};

// The whole text at once: LabelsCsvParser fed once.
std::map<std::string, std::string> parse_labels_csv(std::string_view text, const std::string& where);

}  // namespace frugal::detail
