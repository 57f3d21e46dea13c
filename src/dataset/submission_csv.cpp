#include "frugal/dataset/submission_csv.h"

#include <charconv>
#include <unordered_map>

#include "frugal/util/error.h"

namespace frugal {

SubmissionColumns parse_submission_columns(const std::string& text, const std::string& option) {
  const auto comma = text.find(',');
  if (comma == std::string::npos || comma == 0 || comma + 1 == text.size() ||
      text.find(',', comma + 1) != std::string::npos)
    fail(ErrorKind::usage, option, "two column names, ID,LABEL (e.g. image_id,label or id,breed)", "'" + text + "'",
         "give the id column's name, a comma, then the label column's name");
  return {text.substr(0, comma), text.substr(comma + 1)};
}

void refuse_duplicate_ids(const std::vector<PredictImage>& images, const std::string& csv) {
  std::unordered_map<std::string, std::size_t> first;
  std::string list;
  std::size_t n = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto [it, added] = first.emplace(images[i].id, i);
    if (added) continue;
    if (++n <= 5)
      list += (list.empty() ? "'" : ", '") + images[i].id + "' (" + images[it->second].name + " and " + images[i].name +
              ")";
  }
  if (n == 0) return;
  if (n > 5) list += ", and " + std::to_string(n - 5) + " more";
  fail(ErrorKind::invalid, csv, "one row per id (the image's file name without its extension)",
       std::to_string(n) + " id" + (n == 1 ? "" : "s") + " given by two images: " + list,
       "a submission with duplicate ids is refused; predict them apart, or rename one of each pair; nothing "
       "was written");
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string submission_header(const SubmissionColumns& columns, const std::vector<std::string>* classes) {
  std::string line = csv_field(columns.id);
  if (classes) {
    for (const std::string& c : *classes) line += "," + csv_field(c);
  } else {
    line += "," + csv_field(columns.label);
  }
  return line + "\n";
}

std::string submission_row(std::string_view id, std::string_view label) {
  return csv_field(id) + "," + csv_field(label) + "\n";
}

std::string submission_row(std::string_view id, std::span<const float> probabilities) {
  std::string line = csv_field(id);
  char buf[32];
  for (float p : probabilities) {
    const auto r = std::to_chars(buf, buf + sizeof buf, p);
    line += ',';
    line.append(buf, r.ptr);
  }
  return line + "\n";
}

}  // namespace frugal
