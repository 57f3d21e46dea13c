#include "dataset/label_sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "dataset/labels_csv.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/text.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

// Under {labels_header} auto, a first row that reads as data is no header to drop.
[[noreturn]] void refuse_data_like_header(const std::string& at, const std::string& id, const std::string& why) {
  fail(ErrorKind::usage, at, "a header row first ({labels_header} auto takes the first row as the header)",
       "a first row (id " + id + ") that looks like data: " + why,
       "give {labels_header} no if the file has no header (columns by index, e.g. {label_columns} 0,1), or "
       "{labels_header} yes if that row is the header");
}

}  // namespace

namespace detail {
namespace {

std::string shown(std::string_view s) { return "\"" + printable(std::string(s.substr(0, 200))) + "\""; }

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower_ascii(std::string_view s) {
  std::string l(s);
  for (char& c : l) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return l;
}

// A 0/1 column's value: 0, 1, 0.0, 1.0, true, false (any case, blanks around); nullopt otherwise.
std::optional<bool> zero_one(std::string_view v) {
  const std::string l = lower_ascii(trim_blanks(v));
  if (l == "0" || l == "0.0" || l == "false") return false;
  if (l == "1" || l == "1.0" || l == "true") return true;
  return std::nullopt;
}

// An id that ends as an image's (or .npy's) file name does: what no header's column name is.
bool looks_like_image_name(std::string_view id) {
  const auto dot = id.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == id.size()) return false;
  static const std::set<std::string> kImage = {"jpg", "jpeg", "jpe",  "jfif", "png",  "webp", "gif",
                                               "bmp", "tif",  "tiff", "npy",  "heic", "avif"};
  return kImage.count(lower_ascii(id.substr(dot + 1))) > 0;
}

}  // namespace

CsvReader::CsvReader(std::string where, char delimiter, Row row)
    : where_(std::move(where)), delimiter_(delimiter), row_(std::move(row)) {}

void CsvReader::end_field() {
  fields_.push_back(std::move(field_));
  field_.clear();
  quoted_ = in_quotes_ = quote_seen_ = false;
}

void CsvReader::end_record() {
  end_field();
  const bool empty_line = fields_.size() == 1 && fields_[0].empty();
  if (!empty_line) row_(fields_, record_line_);
  fields_.clear();
  record_bytes_ = 0;
  record_line_ = line_;
}

void CsvReader::feed(std::string_view bytes) {
  bytes_ += bytes.size();
  if (bytes_ > kMaxLabelsCsvBytes)
    fail(ErrorKind::invalid, where_, "a labels file of at most " + format_size(kMaxLabelsCsvBytes), "a larger file",
         "shorten the file");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (!started_) {
      // A UTF-8 BOM, as spreadsheets write it, is not part of the first column's name.
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      if (field_.size() < 3 && c == kBom[field_.size()] && fields_.empty() && !quoted_) {
        field_ += c;
        if (field_.size() == 3) {
          field_.clear();
          started_ = true;
        }
        continue;
      }
      started_ = true;
    }
    if (++record_bytes_ > kMaxLabelsLine)
      fail(ErrorKind::invalid, where_ + ":" + std::to_string(record_line_),
           "rows of at most " + format_size(kMaxLabelsLine), "a longer one", "fix the file");
    if (c == '\n') ++line_;
    if (in_quotes_) {
      if (c == '"')
        in_quotes_ = false, quote_seen_ = true;
      else
        field_ += c;
      continue;
    }
    if (c == '"') {
      if (quote_seen_) {  // "" inside a quoted field: one quote
        field_ += '"';
        in_quotes_ = true;
        quote_seen_ = false;
      } else if (field_.empty() && !quoted_) {
        quoted_ = in_quotes_ = true;
      } else {
        field_ += c;  // a quote inside an unquoted field is text, as pandas reads it
      }
      continue;
    }
    quote_seen_ = false;
    if (c == delimiter_)
      end_field();
    else if (c == '\n')
      end_record();
    else if (c != '\r')
      field_ += c;
  }
}

void CsvReader::finish() {
  if (in_quotes_)
    fail(ErrorKind::invalid, where_ + ":" + std::to_string(record_line_), "a closing quote (\")",
         "the end of the file inside a quoted field", "fix the file");
  if (!field_.empty() || !fields_.empty() || quoted_) end_record();
}

CsvLabelTable::CsvLabelTable(std::string where, char delimiter, CsvLabelFormat format)
    : where_(std::move(where)),
      columns_(std::move(format.columns)),
      separator_(std::move(format.separator)),
      header_(std::move(format.header)),
      reader_(where_, delimiter,
              [this](const std::vector<std::string>& fields, std::size_t line) { row(fields, line); }) {
  if (header_ != "yes" && header_ != "no" && header_ != "auto")
    fail(ErrorKind::usage, "{labels_header}", "yes, no or auto", shown(header_), "");
}

std::vector<std::string_view> split_tags(std::string_view label, std::string_view separator) {
  std::vector<std::string_view> tags;
  if (separator.empty()) separator = " ";
  for (std::size_t at = 0; at <= label.size();) {
    std::size_t end = label.find(separator, at);
    if (end == std::string_view::npos) end = label.size();
    if (const std::string_view tag = trim_blanks(label.substr(at, end - at)); !tag.empty()) tags.push_back(tag);
    at = end + separator.size();
  }
  return tags;
}

std::size_t CsvLabelTable::column(const std::vector<std::string>& header, std::string_view spec) const {
  spec = trim_blanks(spec);
  std::optional<std::size_t> found;
  if (all_digits(spec)) {
    std::size_t i = 0;
    std::from_chars(spec.data(), spec.data() + spec.size(), i);
    if (i < header.size()) found = i;
  } else {
    for (std::size_t i = 0; i < header.size() && !found; ++i)
      if (header[i] == spec) found = i;
    for (std::size_t i = 0; i < header.size() && !found; ++i)
      if (trim_blanks(header[i]) == spec) found = i;
  }
  if (found) return *found;
  std::string names;
  for (std::size_t i = 0; i < header.size() && i < 20; ++i)
    names += (i ? ", " : "") + std::to_string(i) + ": " + shown(header[i]);
  if (header.size() > 20) names += ", and " + std::to_string(header.size() - 20) + " more";
  fail(ErrorKind::usage, where_,
       "a column " + shown(spec) + " ({label_columns} names columns by header name or 0-based index)",
       std::to_string(header.size()) + " column" + (header.size() == 1 ? "" : "s") + ": " + names,
       "give {label_columns} ID,LABEL with two of them");
}

// One tag per 0/1 column: "ID,*" every column after ID, "ID,A,B,..." the ones named.
void CsvLabelTable::tag_columns(const std::vector<std::string>& first, const std::vector<std::string_view>& spec) {
  if (spec.size() == 2)
    for (std::size_t i = id_column_ + 1; i < first.size(); ++i) tag_columns_.push_back(i);
  for (std::size_t k = 1; spec.size() > 2 && k < spec.size(); ++k) {
    if (trim_blanks(spec[k]) == "*")
      fail(ErrorKind::usage, "{label_columns}", "ID,* alone, or ID,A,B,... naming each 0/1 column", shown(columns_),
           "e.g. image_name,* or image_name,haze,clear");
    tag_columns_.push_back(column(first, spec[k]));
  }
  if (tag_columns_.empty())
    fail(ErrorKind::usage, where_, "columns after the id column (" + shown(columns_) + ": one 0/1 column per tag)",
         std::to_string(first.size()) + " column" + (first.size() == 1 ? "" : "s"), "check {label_columns}");
  if (!separator_.empty())
    fail(ErrorKind::usage, "{label_separator}", "one kind of multi-label data",
         "tags separated in one column, and 0/1 columns (" + shown(columns_) + ")", "give one of them");
  for (const std::size_t c : tag_columns_) {
    if (c == id_column_)
      fail(ErrorKind::usage, "{label_columns}", "tag columns other than the id column", shown(columns_), "");
    std::string name = header_ == "no" ? std::to_string(c) : std::string(trim_blanks(first[c]));
    if (name.empty()) name = std::to_string(c);  // a column with no header name is known by its index
    check_class_name_length(name, header_where());
    if (!label_index_.emplace(name, static_cast<std::uint32_t>(labels_.size())).second)
      fail(ErrorKind::usage, "{label_columns}", "one column per tag", "two columns for " + shown(name),
           "name the columns to read, e.g. {label_columns} ID,A,B");
    labels_.push_back(std::move(name));
  }
  multi_ = true;
}

void CsvLabelTable::resolve_columns(const std::vector<std::string>& first) {
  std::vector<std::string_view> spec;
  for (std::size_t at = 0; !columns_.empty() && at <= columns_.size();) {
    const std::size_t end = std::min(columns_.find(',', at), columns_.size());
    spec.push_back(std::string_view(columns_).substr(at, end - at));
    at = end + 1;
  }
  if (columns_.empty()) spec = {"0", "1"};
  if (spec.size() < 2)
    fail(ErrorKind::usage, "{label_columns}", "ID,LABEL, ID,* or ID,A,B,... (header names or 0-based indices)",
         shown(columns_), "e.g. image_id,label or 0,1");
  for (const std::string_view c : spec)
    if (!all_digits(trim_blanks(c)) && trim_blanks(c) != "*") by_name_ = true;
  if (by_name_ && header_ == "no")
    fail(ErrorKind::usage, "{label_columns}",
         "columns by 0-based index: with {labels_header} no the file has no header to name them", shown(columns_),
         "give indices (e.g. {label_columns} 0,1), or {labels_header} yes if the first row is the header");
  id_column_ = column(first, spec[0]);
  if (spec.size() > 2 || trim_blanks(spec[1]) == "*") {
    tag_columns(first, spec);
    fields_needed_ = std::max(id_column_, *std::max_element(tag_columns_.begin(), tag_columns_.end())) + 1;
    return;
  }
  label_column_ = column(first, spec[1]);
  if (id_column_ == label_column_)
    fail(ErrorKind::usage, "{label_columns}", "two different columns", shown(columns_), "e.g. image_id,label");
  fields_needed_ = std::max(id_column_, label_column_) + 1;
  multi_ = !separator_.empty();
}

void CsvLabelTable::row(const std::vector<std::string>& fields, std::size_t line) {
  if (header_done_) return data_row(fields, line);
  header_done_ = true;
  first_line_ = line;
  resolve_columns(fields);
  if (header_ == "no") return data_row(fields, line);
  if (header_ == "auto" && !by_name_) {
    first_row_ = fields;
    header_id_ = fields[id_column_];
  }
}

std::vector<std::uint32_t> CsvLabelTable::tags_of(const std::vector<std::string>& fields, const std::string& at) {
  std::vector<std::uint32_t> tags;
  if (tag_columns_.empty()) {
    for (const std::string_view t : split_tags(fields[label_column_], separator_)) {
      check_class_name_length(t, at);
      const auto [it, added] = label_index_.emplace(std::string(t), static_cast<std::uint32_t>(labels_.size()));
      if (added) labels_.emplace_back(t);
      tags.push_back(it->second);
    }
  }
  for (std::size_t k = 0; k < tag_columns_.size(); ++k) {
    const std::string& v = fields[tag_columns_[k]];
    const std::optional<bool> set = zero_one(v);
    if (!set)
      fail(ErrorKind::invalid, at, "0 or 1 in column " + shown(labels_[k]) + " (one 0/1 column per tag)", shown(v),
           "fix the file, or name only the 0/1 columns in {label_columns} (ID,A,B,...)");
    if (*set) tags.push_back(static_cast<std::uint32_t>(k));
  }
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  return tags;
}

std::string CsvLabelTable::label_text(std::uint32_t label) const {
  if (!multi_) return shown(labels_[label]);
  std::string s;
  for (const std::uint32_t t : tag_sets_[label]) s += (s.empty() ? "" : " ") + labels_[t];
  return "tags " + shown(s);
}

void CsvLabelTable::data_row(const std::vector<std::string>& fields, std::size_t line) {
  const std::string at = where_ + ":" + std::to_string(line);
  if (fields.size() < fields_needed_)
    fail(ErrorKind::invalid, at, "a row of at least " + std::to_string(fields_needed_) + " fields",
         std::to_string(fields.size()), "fix the file");
  std::uint32_t label = 0;
  if (multi_) {
    std::vector<std::uint32_t> tags = tags_of(fields, at);
    const auto [it, added] = tag_set_index_.emplace(tags, static_cast<std::uint32_t>(tag_sets_.size()));
    if (added) tag_sets_.push_back(std::move(tags));
    label = it->second;
  } else {
    const std::string& text = fields[label_column_];
    if (text.empty()) return;
    check_class_name_length(text, at);
    const auto [l, added_label] = label_index_.emplace(text, static_cast<std::uint32_t>(labels_.size()));
    if (added_label) labels_.push_back(text);
    label = l->second;
  }
  const std::string id = normalize_relative(fields[id_column_]);
  if (id.empty())
    fail(ErrorKind::invalid, at, "an id naming a file inside the data (no \"..\", not absolute)",
         shown(fields[id_column_]), "fix the file");
  const auto [it, added] = rows_.emplace(id, Row{label});
  if (!added && it->second.label != label)
    fail(ErrorKind::invalid, at, "one label per id",
         shown(id) + " labelled both " + label_text(it->second.label) + " and " + label_text(label), "fix the file");
}

// Why the first row, taken as the header, reads as a row of data ("" when it does not).
std::string CsvLabelTable::data_like(const std::vector<std::string>& first) const {
  const std::string& id = first[id_column_];
  if (looks_like_image_name(id)) return "its id " + shown(id) + " is a file name";
  if (!tag_columns_.empty()) {
    if (std::all_of(tag_columns_.begin(), tag_columns_.end(), [&](std::size_t c) { return zero_one(first[c]); }))
      return "its tag columns hold 0/1 values as the rows do";
    return "";
  }
  const std::string& label = first[label_column_];
  if (!multi_) return label_index_.count(label) ? "its label " + shown(label) + " is a label of later rows too" : "";
  for (const std::string_view t : split_tags(label, separator_))
    if (label_index_.count(std::string(t))) return "its tag " + shown(t) + " is a tag of later rows too";
  return "";
}

void CsvLabelTable::finish() {
  reader_.finish();
  if (!header_done_)
    fail(ErrorKind::invalid, where_, header_ == "no" ? "rows of id and label" : "a header row and rows of id and label",
         "an empty file", "");
  if (first_row_.empty()) return;
  if (const std::string why = data_like(first_row_); !why.empty())
    refuse_data_like_header(header_where(), shown(first_row_[id_column_]), why);
  first_row_.clear();
}

char csv_delimiter(std::string_view file_name, std::string_view first_bytes) {
  std::string ext;
  if (const auto dot = file_name.rfind('.'); dot != std::string_view::npos)
    for (char c : file_name.substr(dot)) ext += static_cast<char>(c | 0x20);
  if (ext == ".tsv" || ext == ".tab") return '\t';
  const std::string_view line = first_bytes.substr(0, first_bytes.find('\n'));
  return line.find('\t') != std::string_view::npos && line.find(',') == std::string_view::npos ? '\t' : ',';
}

namespace {

// The names of a JSON object of class numbers to names, or of a list of names: strings, and only
// strings, so that nothing deep is built or freed (json_nesting looks before parsing).
void parse_class_names_json(std::string_view text, const std::string& where,
                            const std::function<void(long long, std::string, const std::string&)>& add) {
  const char* shape = "a JSON object of class numbers to names ({\"0\": \"cat\", ...}) or a list of names";
  if (const std::size_t most = json_nesting(text); most > 1)
    fail(ErrorKind::invalid, where, std::string(shape) + "; a class name must be a string",
         "a list or an object where a name goes (JSON nested " + std::to_string(most) + " levels deep)",
         "write each name as a string, e.g. {\"0\": \"cat\"}");
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !(j.is_object() || j.is_array()))
    fail(ErrorKind::invalid, where, shape, "other text", "fix the file");
  long long i = 0;
  for (const auto& [key, value] : j.items()) {
    long long label = i++;
    if (j.is_object()) {
      const auto r = std::from_chars(key.data(), key.data() + key.size(), label);
      if (r.ec != std::errc() || r.ptr != key.data() + key.size() || label < 0)
        fail(ErrorKind::invalid, where, "class numbers as keys (\"0\", \"1\", ...)", shown(key), "fix the file");
    }
    const std::string at = where + " (class " + std::to_string(label) + ")";
    if (!value.is_string())
      fail(ErrorKind::invalid, at, "a class name, which must be a string (\"0\": \"cat\")",
           std::string(value.type_name()) + " " + value.dump().substr(0, 40), "write the name in quotes");
    add(label, value.get<std::string>(), at);
  }
}

}  // namespace

std::map<long long, std::string> parse_class_names(std::string_view text, const std::string& where) {
  if (text.size() > kMaxClassNamesBytes)
    fail(ErrorKind::invalid, where, "a class names file of at most " + format_size(kMaxClassNamesBytes),
         format_size(text.size()), "");
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::map<long long, std::string> names;
  // `at`: where the name is, "FILE:LINE" or "FILE (class N)".
  auto add = [&](long long label, std::string name, const std::string& at) {
    if (name.empty()) fail(ErrorKind::invalid, at, "a name for class " + std::to_string(label), "an empty one", "");
    check_class_name_length(name, at);
    if (!names.emplace(label, std::move(name)).second)
      fail(ErrorKind::invalid, where, "one name per class", "two for class " + std::to_string(label), "fix the file");
  };
  const std::string_view body = trim_blanks(text.substr(0, std::min<std::size_t>(text.size(), 64)));
  const char first = body.empty() ? '\0' : body.front();
  if (first == '{' || first == '[') {
    parse_class_names_json(text, where, add);
  } else {
    long long i = 0;
    while (!text.empty()) {
      const auto nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (text.empty() && line.empty()) break;  // the newline ending the last line
      const long long label = i++;
      add(label, std::string(line), where + ":" + std::to_string(label + 1));
    }
  }
  std::map<std::string, long long> seen;
  for (const auto& [label, name] : names)
    if (const auto [it, added] = seen.emplace(name, label); !added)
      fail(ErrorKind::invalid, where, "one name per class",
           shown(name) + " for classes " + std::to_string(it->second) + " and " + std::to_string(label),
           "fix the file");
  if (names.empty()) fail(ErrorKind::invalid, where, "class names", "none", "fix the file");
  return names;
}

std::string tag_lists_seen(const std::vector<std::string>& labels, char* separator) {
  for (const char sep : {' ', ',', ';', '|'}) {
    std::set<std::string> tags;
    std::size_t lists = 0, most = 0;
    const std::string* example = nullptr;
    for (const std::string& label : labels) {
      std::size_t n = 0;
      for (std::size_t at = 0; at <= label.size();) {
        std::size_t end = label.find(sep, at);
        if (end == std::string::npos) end = label.size();
        std::string_view tag = std::string_view(label).substr(at, end - at);
        while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
        while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
        if (!tag.empty()) {
          tags.emplace(tag);
          ++n;
        }
        at = end + 1;
      }
      if (n >= 2) ++lists;
      if (n > most) {
        most = n;
        example = &label;
      }
    }
    if (example && most >= 2 && 2 * lists >= labels.size() && 2 * tags.size() <= labels.size()) {
      if (separator) *separator = sep;
      return "'" + example->substr(0, 80) + "' looks like " + std::to_string(most) + " tags: " + std::to_string(lists) +
             " of " + std::to_string(labels.size()) + " distinct labels are lists separated by '" +
             std::string(1, sep) + "', of " + std::to_string(tags.size()) + " distinct tags";
    }
  }
  return "";
}

}  // namespace detail

namespace {

// A file named by an option, found inside the data (`entry`) or on disk (`disk`).
struct OptionFile {
  std::string where;                  // for messages
  std::optional<std::string> member;  // its path inside the data
  std::optional<std::size_t> entry;
  std::filesystem::path disk;
};

// `file` inside the data first (the data is what the user pointed at), then as a path on disk,
// then beside the data (a CSV next to a zip or a folder).
OptionFile find_option_file(const Archive& a, const std::filesystem::path& data_path, const std::string& file,
                            const std::string& setting) {
  OptionFile f;
  if (const std::string key = normalize_relative(file); !key.empty()) {
    std::optional<std::size_t> entry = a.find(key);
    for (std::size_t i = 0; !entry && i < a.entries().size(); ++i)
      if (!a.entries()[i].is_dir && normalize_relative(a.entries()[i].name) == key) entry = i;
    if (entry && !a.entries()[*entry].is_dir) {
      f.entry = entry;
      f.member = key;
      f.where = a.display_name() + ":" + key;
      return f;
    }
  }
  std::error_code ec;
  std::vector<std::filesystem::path> tried = {file};
  std::filesystem::path data = data_path.lexically_normal();
  if (data.filename().empty()) data = data.parent_path();
  if (std::filesystem::exists(data, ec) && std::filesystem::path(file).is_relative())
    tried.push_back(data.parent_path() / file);
  for (const auto& p : tried)
    if (std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::not_found) {
      f.disk = p;
      f.where = p.string();
      return f;
    }
  std::string looked = a.display_name() + ":" + file;
  for (const auto& p : tried) looked += ", " + p.string();
  fail(ErrorKind::usage, setting, "a file inside the data or beside it",
       "'" + file + "' in neither (looked for " + looked + ")",
       "give the file's path inside the data (as 'frugal ls' shows it) or on disk");
}

// The file's bytes in pieces (memory: one piece), refused past `max_bytes` before anything is read.
void read_option_file(const Archive& a, const OptionFile& f, std::uint64_t max_bytes, const char* what,
                      const std::function<void(std::string_view)>& sink) {
  auto too_large = [&](std::uint64_t size) {
    fail(ErrorKind::invalid, f.where, std::string(what) + " of at most " + format_size(max_bytes), format_size(size),
         "shorten the file");
  };
  if (f.entry) {
    if (a.entries()[*f.entry].size > max_bytes) too_large(a.entries()[*f.entry].size);
    a.read_to(*f.entry, [&](std::span<const std::uint8_t> piece) {
      sink(std::string_view(reinterpret_cast<const char*>(piece.data()), piece.size()));
    });
    return;
  }
  const UniqueFd fd = open_regular(f.disk, Links::follow);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("reading", f.disk.string(), errno);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) too_large(static_cast<std::uint64_t>(st.st_size));
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("reading", f.disk.string(), errno);
    if (n == 0) break;
    if ((total += static_cast<std::uint64_t>(n)) > max_bytes) too_large(total);  // it grew while read
    sink(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  }
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string base_of(const std::string& path) { return path.substr(folder_of(path).size()); }

std::string without_extension(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos || dot < folder_of(path).size() || dot == folder_of(path).size()
             ? path
             : path.substr(0, dot);
}

// The shallowest labels.csv (any case) in the data, as layout.cpp finds it; nullopt when none.
std::optional<std::string> labels_csv_in(const Archive& a) {
  std::optional<std::string> best;
  std::size_t depth = 0;
  for (const ZipEntry& e : a.entries()) {
    if (e.is_dir) continue;
    std::string base = base_of(e.name);
    for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t d = static_cast<std::size_t>(std::count(e.name.begin(), e.name.end(), '/'));
    if (base == "labels.csv" && (!best || d < depth)) {
      best = e.name;
      depth = d;
    }
  }
  return best;
}

}  // namespace

std::unique_ptr<CsvLabels> CsvLabels::open(const Archive& a, const std::filesystem::path& data_path,
                                           const DatasetOptions& o) {
  if (o.labels.empty()) {
    const char* given = !o.label_columns.empty()     ? "{label_columns}"
                        : !o.images_dir.empty()      ? "{images_dir}"
                        : !o.label_separator.empty() ? "{label_separator}"
                        : o.labels_header != "auto"  ? "{labels_header}"
                                                     : nullptr;
    if (!given) return nullptr;  // a labels.csv in the data is read by layout.cpp's rule
    // They say how to read a labels.csv found in the data: it is read as {labels} would name it.
    if (const auto csv = labels_csv_in(a)) {
      DatasetOptions with = o;
      with.labels = *csv;
      return open(a, data_path, with);
    }
    fail(ErrorKind::usage, given, "{labels} FILE beside it (or a labels.csv in the data)", "neither",
         "give the CSV with {labels}");
  }
  if (!o.label_pattern.empty())
    fail(ErrorKind::usage, "{labels}", "one source of labels", "{labels} and {label_pattern}", "give one of them");
  auto l = std::make_unique<CsvLabels>();
  const OptionFile f = find_option_file(a, data_path, o.labels, "{labels}");
  l->where_ = f.where;
  l->member_ = f.member;
  l->file_name_ = base_of(f.member ? *f.member : f.disk.filename().string());
  if (!o.images_dir.empty()) {
    const std::string dir = normalize_relative(o.images_dir);
    if (dir.empty())
      fail(ErrorKind::usage, "{images_dir}", "a folder inside the data (e.g. train_images/)", "'" + o.images_dir + "'",
           "give the folder as 'frugal ls' names it");
    l->bases_.push_back(dir + "/");
  }
  // Ids are relative to the CSV's folder (the data's top for a CSV read from disk).
  l->bases_.push_back(f.member ? folder_of(*f.member) : "");
  if (l->bases_.size() == 2 && l->bases_[0] == l->bases_[1]) l->bases_.pop_back();
  const detail::CsvLabelFormat format{o.label_columns, o.label_separator, o.labels_header};
  bool first = true;
  read_option_file(a, f, detail::kMaxLabelsCsvBytes, "a labels file", [&](std::string_view piece) {
    if (first) {
      l->table_ = std::make_unique<detail::CsvLabelTable>(f.where, detail::csv_delimiter(l->file_name_, piece), format);
      first = false;
    }
    l->table_->feed(piece);
  });
  if (!l->table_) l->table_ = std::make_unique<detail::CsvLabelTable>(f.where, ',', format);
  l->table_->finish();
  l->check_header_names_no_file(a);
  if (l->multi_label() && o.labels_are_classes)
    fail(ErrorKind::usage, "{labels_are_classes}", "one reading of the labels",
         "each whole label one class, and multi-label tags", "leave out {labels_are_classes}");
  char sep = ' ';
  if (const std::string tags =
          o.labels_are_classes || l->multi_label() ? "" : detail::tag_lists_seen(l->table_->labels(), &sep);
      !tags.empty())
    fail(ErrorKind::usage, f.where, "one class per label", tags,
         std::string("if each image has several tags (multi-label), give {label_separator} '") + sep +
             "'; if each whole label is one class, add {labels_are_classes}");
  return l;
}

// {labels_header} auto: a first row whose id names a file of the data is a row of data.
void CsvLabels::check_header_names_no_file(const Archive& a) const {
  const auto& id = table_->header_id();
  if (!id) return;
  const std::string key = normalize_relative(*id);
  if (key.empty()) return;
  for (const std::string& base : bases_) {
    const std::string path = base + key;
    bool found = a.find(path).has_value();
    for (std::size_t i = 0; !found && i < a.entries().size(); ++i)
      found = !a.entries()[i].is_dir && without_extension(normalize_relative(a.entries()[i].name)) == path;
    if (found)
      refuse_data_like_header(table_->header_where(), "\"" + printable(id->substr(0, 200)) + "\"",
                              "its id names " + path + ", a file of the data");
  }
}

detail::CsvLabelTable::Row* CsvLabels::find(const std::string& path) {
  auto& rows = table_->rows();
  for (const std::string& base : bases_) {
    if (path.size() <= base.size() || path.compare(0, base.size(), base) != 0) continue;
    const std::string rel = path.substr(base.size());
    auto it = rows.find(rel);
    if (it == rows.end()) it = rows.find(without_extension(rel));
    if (it == rows.end()) continue;
    if (!it->second.used) ++used_;
    it->second.used = true;
    return &it->second;
  }
  return nullptr;
}

std::string CsvLabels::label(const std::string& path) {
  const detail::CsvLabelTable::Row* row = find(path);
  return row ? table_->labels()[row->label] : std::string();
}

std::optional<std::uint32_t> CsvLabels::tag_set(const std::string& path) {
  const detail::CsvLabelTable::Row* row = find(path);
  return row ? std::optional<std::uint32_t>(row->label) : std::nullopt;
}

void CsvLabels::finish(SkipReport& skips, const std::string& scanned, const std::vector<std::string>& paths) const {
  auto under_scanned = [&](const std::string& id) {
    return std::any_of(bases_.begin(), bases_.end(),
                       [&](const std::string& b) { return (b + id).compare(0, scanned.size(), scanned) == 0; });
  };
  std::uint64_t missing = 0;
  std::string example;
  for (const auto& [id, row] : table_->rows())
    if (!row.used && under_scanned(id) && missing++ == 0) example = id;
  // The example is the smallest id, so the line is the same on every run.
  if (missing > 1)
    for (const auto& [id, row] : table_->rows())
      if (!row.used && under_scanned(id) && id < example) example = id;
  if (missing > 0) {
    const std::string reason = "no image (an id of " + file_name_ + ")";
    skips.counts[reason] += missing;
    skips.examples[reason] = example;
    note(where_ + ": " + std::to_string(missing) + " of its " + std::to_string(table_->rows().size()) +
         " ids name no image of the data (e.g. \"" + example + "\", looked for as " + bases_.front() + example +
         (without_extension(example) == example ? ".*" : "") + "); they are left out");
  }
  if (used_ > 0 || table_->rows().empty() || paths.empty()) return;
  // Nothing matched: where does the first id's image lie? Its folder is what {images_dir} is for.
  std::string id = example;
  if (id.empty())  // the smallest, so the line is the same on every run
    for (const auto& [i, row] : table_->rows())
      if (id.empty() || i < id) id = i;
  for (const std::string& p : paths) {
    const std::string b = base_of(p);
    if (b != base_of(id) && without_extension(b) != base_of(id)) continue;
    // p is DIR + id (+ its extension when the id has none)
    const std::size_t rel_size = id.size() + (b.size() - base_of(id).size());
    if (p.size() <= rel_size) continue;
    const std::string dir = p.substr(0, p.size() - rel_size);
    if (dir.back() != '/') continue;
    note(where_ + ": no id names a file relative to " +
         (bases_.front().empty() ? std::string("the top of the data") : bases_.front()) + ", but \"" + id + "\" is " +
         p + ": give {images_dir} " + dir);
    return;
  }
}

std::optional<ClassNames> read_class_names(const Archive& a, const std::filesystem::path& data_path,
                                           const DatasetOptions& o) {
  if (o.class_names.empty()) return std::nullopt;
  const OptionFile f = find_option_file(a, data_path, o.class_names, "{class_names}");
  std::string text;
  read_option_file(a, f, detail::kMaxClassNamesBytes, "a class names file",
                   [&](std::string_view piece) { text.append(piece); });
  return ClassNames{f.where, f.member, detail::parse_class_names(text, f.where)};
}

void name_classes(std::vector<std::string>& classes, const ClassNames& class_names) {
  const auto& [where, member, names] = class_names;
  std::vector<std::string> named;
  std::set<std::string> seen;
  for (const std::string& c : classes) {
    long long label = -1;
    const auto r = std::from_chars(c.data(), c.data() + c.size(), label);
    if (r.ec != std::errc() || r.ptr != c.data() + c.size())
      fail(ErrorKind::usage, "{class_names}", "integer classes to name (0, 1, ...)",
           "class \"" + printable(c) + "\": the labels are names already", "leave out {class_names}");
    const auto it = names.find(label);
    if (it == names.end())
      fail(ErrorKind::invalid, where, "a name for every class of the data", "none for class " + c,
           "add it to the file");
    // Names from a reader's metadata too (Hugging Face's): the one limit of label files.
    detail::check_class_name_length(it->second, where + " (class " + c + ")");
    if (!seen.insert(it->second).second)  // "3" and "03"
      fail(ErrorKind::invalid, where, "one class per name",
           "\"" + printable(it->second) + "\" for two classes of the data, one of them " + c,
           "write each label one way in the labels");
    named.push_back(it->second);
  }
  classes = std::move(named);
}

}  // namespace frugal
