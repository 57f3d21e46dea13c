#include "frugal/dataset/submission_csv.h"

#include <charconv>
#include <set>
#include <unordered_map>

#include "frugal/util/error.h"
#include "frugal/util/terminal.h"

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

bool is_formula_cell(std::string_view cell) {
  return !cell.empty() && std::string_view("=+-@\t\r").find(cell.front()) != std::string_view::npos;
}

std::string csv_field(std::string_view raw, bool escape_formulas) {
  // Escaped first: a name starting with a tab is then "\t...", text to every spreadsheet.
  const std::string text = is_printable(raw) ? std::string(raw) : printable(raw);
  const bool as_text = escape_formulas && is_formula_cell(text);
  if (!as_text && text.find_first_of(",;\"") == std::string::npos) return text;
  std::string out = as_text ? "\"'" : "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string submission_header(const SubmissionColumns& columns, const std::vector<std::string>* classes,
                              bool escape_formulas) {
  std::string line = csv_field(columns.id, escape_formulas);
  if (classes) {
    for (const std::string& c : *classes) line += "," + csv_field(c, escape_formulas);
  } else {
    line += "," + csv_field(columns.label, escape_formulas);
  }
  return line + "\n";
}

std::string submission_row(std::string_view id, std::string_view label, bool escape_formulas) {
  return csv_field(id, escape_formulas) + "," + csv_field(label, escape_formulas) + "\n";
}

std::string submission_row(std::string_view id, std::span<const float> probabilities, bool escape_formulas) {
  std::string line = csv_field(id, escape_formulas);
  char buf[32];
  for (float p : probabilities) {
    const auto r = std::to_chars(buf, buf + sizeof buf, p);
    line += ',';
    line.append(buf, r.ptr);
  }
  return line + "\n";
}

namespace {

// "3 class names (\"=A\", \"+B\", \"@C\")": the first five, each escaped and cut near 80 bytes.
std::string named(const std::string& what, const std::vector<std::string>& texts) {
  std::string list;
  for (std::size_t i = 0; i < texts.size() && i < 5; ++i) {
    std::string shown = printable(texts[i]);
    if (shown.size() > 80) {
      std::size_t cut = 77;
      while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      shown = shown.substr(0, cut) + "...";
    }
    list += std::string(i == 0 ? "" : ", ") + "\"" + shown + "\"";
  }
  if (texts.size() > 5) list += ", and " + std::to_string(texts.size() - 5) + " more";
  return std::to_string(texts.size()) + " " + what + (texts.size() == 1 ? "" : "s") + " (" + list + ")";
}

}  // namespace

std::vector<std::string> unsafe_cells_warning(const std::string& csv, const std::string& what,
                                              const std::vector<std::string>& texts, bool escape_formulas,
                                              const std::string& option) {
  std::vector<std::string> formulas, controls;
  std::set<std::string_view> seen;
  for (const std::string& t : texts) {
    if (!seen.insert(t).second) continue;
    const bool plain = is_printable(t);
    if (!plain) controls.push_back(t);
    if (is_formula_cell(plain ? t : printable(t))) formulas.push_back(t);  // as csv_field() judges it
  }
  std::vector<std::string> out;
  if (!controls.empty())
    out.push_back(csv + ": control characters in " + named(what, controls) +
                  ", written escaped as shown here (\\x00, \\t, \\u202e): a cell never holds them raw");
  if (formulas.empty()) return out;
  if (escape_formulas)
    out.push_back(csv + ": " + named(what, formulas) +
                  " that a spreadsheet would run as formulas, written as text (a ' before each, " + option + ")");
  else
    out.push_back(csv + ": " + named(what, formulas) +
                  " start cells that a spreadsheet would run as formulas (= + - @); written as they are, as a "
                  "grader reads them; before opening the file in a spreadsheet, write it with " +
                  option + " (each such cell as text, after a ')");
  return out;
}

}  // namespace frugal
