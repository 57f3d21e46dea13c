// Labels the way datasets ship them: a CSV or TSV named by --labels (Kaggle's train.csv of
// `image_id,label`, dog-breed's labels.csv of `id,breed`) with its columns chosen by
// --label-columns, and --class-names naming integer classes (cassava's
// label_num_to_disease_map.json). Both files are found inside the data or beside it on disk.
//
// Paths here are relative to the data as given (DATA, under {data_root}), before a split folder is
// chosen: a CSV at the top of the data labels the files of train/ and val/ alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frugal/dataset/dataset.h"

namespace frugal {

class Archive;

namespace detail {

// The largest --class-names file read: a name a line for a million classes fits.
inline constexpr std::uint64_t kMaxClassNamesBytes = std::uint64_t{16} << 20;

// A CSV or TSV read as it arrives, in pieces of any size, as RFC 4180 and pandas read it: fields
// may be quoted ("a, b", "say ""hi"""), a quoted field may span lines, a UTF-8 BOM and '\r' are
// dropped, empty lines are skipped. Memory is one record plus what `row` keeps: a record past
// kMaxLabelsLine or a file past kMaxLabelsCsvBytes (labels_csv.h) is refused when it is seen.
class CsvReader {
 public:
  using Row = std::function<void(const std::vector<std::string>& fields, std::size_t line)>;
  CsvReader(std::string where, char delimiter, Row row);
  void feed(std::string_view bytes);
  void finish();

 private:
  void end_field();
  void end_record();

  std::string where_;
  char delimiter_;
  Row row_;
  std::vector<std::string> fields_;
  std::string field_;
  std::uint64_t bytes_ = 0;
  std::size_t record_bytes_ = 0;
  std::size_t line_ = 1, record_line_ = 1;  // 1-based, as editors count
  bool started_ = false;                    // the BOM is looked for in the first bytes only
  bool quoted_ = false, in_quotes_ = false, quote_seen_ = false;
};

// How one labels file is read: --label-columns, --label-separator and --labels-header.
struct CsvLabelFormat {
  // "ID,LABEL" (one label column), "ID,*" (every column after ID is a tag, 0/1) or "ID,A,B,..." (more
  // than one label column: each a tag, 0/1); each a header name or a 0-based index. "" the first two.
  std::string columns;
  std::string separator;        // the label column holds tags separated by this ("" one label)
  std::string header = "auto";  // whether the first row is the header: yes, no, auto
};

// The tags of one label: split on `separator`, each trimmed of blanks, empty ones dropped (so ' '
// splits runs of spaces once, and "" is no tag).
std::vector<std::string_view> split_tags(std::string_view label, std::string_view separator);

// The label table of one CSV: id (normalised as normalize_relative does) -> label. `format.columns`
// chooses the columns; a column the header does not have is Error(usage) naming the columns it has;
// an id that cannot name a file inside the data (empty, absolute, "..") or one id given two labels
// is Error(invalid) naming file:line. A row whose label is empty labels nothing (single-label).
//
// Multi-label (a separator, or 0/1 columns): labels() are the tags, each row's label indexes
// tag_sets(), and an empty tag list is a row of no tag (a negative sample). A 0/1 column holding
// anything but 0, 1, 0.0, 1.0, true or false (any case) is Error(invalid) naming file:line, the
// column and the value.
//
// The header: with format.header "yes" the first row is the header, with "no" it is data (columns
// by index only: a name is Error(usage)). With "auto" it is the header, unless the columns are
// given by index (or not at all) and the first row looks like data: its id has an image file's
// extension, its label (or one of its tags) is a label of a later row, or its 0/1 columns hold
// 0/1 values. Then finish() throws Error(usage) naming {labels_header}; CsvLabels::open adds the
// rule that needs the data (the id names one of its files). A data row is never dropped silently.
class CsvLabelTable {
 public:
  CsvLabelTable(std::string where, char delimiter, std::string columns)
      : CsvLabelTable(std::move(where), delimiter, CsvLabelFormat{std::move(columns), "", "auto"}) {}
  CsvLabelTable(std::string where, char delimiter, CsvLabelFormat format);
  void feed(std::string_view bytes) { reader_.feed(bytes); }
  void finish();

  struct Row {
    std::uint32_t label;  // into labels(); multi-label: into tag_sets()
    bool used = false;    // a file of the data took this label
  };
  std::unordered_map<std::string, Row>& rows() { return rows_; }
  // Single-label: the distinct labels, as met. Multi-label: the tags (in column order for 0/1
  // columns, else as met).
  const std::vector<std::string>& labels() const { return labels_; }
  bool multi_label() const { return multi_; }
  // Multi-label: the distinct sets of tags rows hold, each sorted indices into labels().
  const std::vector<std::vector<std::uint32_t>>& tag_sets() const { return tag_sets_; }
  // Under header "auto": the first row's id when the first row was taken as the header without a
  // column named in it (so the data's files may yet show it is data); nullopt otherwise.
  const std::optional<std::string>& header_id() const { return header_id_; }
  // "FILE:LINE" of the first row.
  std::string header_where() const { return where_ + ":" + std::to_string(first_line_); }

 private:
  void row(const std::vector<std::string>& fields, std::size_t line);
  void data_row(const std::vector<std::string>& fields, std::size_t line);
  void resolve_columns(const std::vector<std::string>& first);
  void tag_columns(const std::vector<std::string>& first, const std::vector<std::string_view>& spec);
  std::vector<std::uint32_t> tags_of(const std::vector<std::string>& fields, const std::string& at);
  std::string label_text(std::uint32_t label) const;
  std::string data_like(const std::vector<std::string>& first) const;
  std::size_t column(const std::vector<std::string>& header, std::string_view spec) const;

  std::string where_, columns_, separator_, header_;
  CsvReader reader_;
  bool header_done_ = false, multi_ = false, by_name_ = false;
  std::size_t id_column_ = 0, label_column_ = 1, fields_needed_ = 2, first_line_ = 1;
  std::vector<std::size_t> tag_columns_;  // 0/1 columns, one per tag (labels())
  std::vector<std::string> first_row_;    // held under "auto" until finish() judges it
  std::optional<std::string> header_id_;
  std::unordered_map<std::string, Row> rows_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, std::uint32_t> label_index_;
  std::vector<std::vector<std::uint32_t>> tag_sets_;
  std::map<std::vector<std::uint32_t>, std::uint32_t> tag_set_index_;
};

// Labels that look like tag lists (Kaggle's planet: "clear agriculture primary road"), which read as
// classes would train one class per combination of tags. The rule, for one separator of ' ', ',',
// ';', '|': at least half of the distinct labels hold 2 or more tags, and there are at most half
// as many distinct tags as distinct labels (class names of several words, "golden retriever",
// have about as many distinct words as names, or more). Returns what was seen ("'clear primary
// road' looks like 3 tags: ..."), "" when the labels do not look like tag lists.
// `separator`, when given, is set to the separator seen.
std::string tag_lists_seen(const std::vector<std::string>& labels, char* separator = nullptr);

// ',' or '\t': by the file name (.tsv, .tab), else by its first line (tabs and no comma: TSV).
char csv_delimiter(std::string_view file_name, std::string_view first_bytes);

// --class-names text: a JSON object {"0": "name", ...}, a JSON list ["name", ...] or one name a line.
// Returns label -> name. Throws Error(invalid) naming `where` for anything else (a name that is not
// a string or is empty, a key that is not an integer, two classes of one name, nesting).
std::map<long long, std::string> parse_class_names(std::string_view text, const std::string& where);

}  // namespace detail

// --labels as the dataset uses it: which label each file of the data has.
class CsvLabels {
 public:
  CsvLabels() = default;
  // `data` is the data as given (before a split folder is chosen), `data_path` the DATA text.
  static std::unique_ptr<CsvLabels> open(const Archive& data, const std::filesystem::path& data_path,
                                         const DatasetOptions& options);

  // The label of the file at `path` (relative to the data), "" when the CSV gives it none: its
  // path relative to the ids' folder ({images_dir}, else the CSV's) is an id, with or without its
  // extension.
  std::string label(const std::string& path);
  // Multi-label data: the tag set (into tag_sets()) of the file at `path`, found as label() finds
  // it; nullopt when the CSV has no row for it.
  std::optional<std::uint32_t> tag_set(const std::string& path);
  bool multi_label() const { return table_->multi_label(); }
  const std::vector<std::string>& tag_names() const { return table_->labels(); }
  const std::vector<std::vector<std::uint32_t>>& tag_sets() const { return table_->tag_sets(); }
  // Whether `path` (relative to the data) is the CSV itself: not a sample, not counted.
  bool is_label_file(const std::string& path) const { return member_ && *member_ == path; }
  const std::string& where() const { return where_; }  // the file, as messages name it
  std::string no_label_reason() const { return "no label (not in " + file_name_ + ")"; }
  // After every file was asked: ids whose image is missing under `scanned` (the split folder read,
  // "" for all the data) counted in `skips` and said in one line; when no id named any of `paths`
  // (the data's files), a line saying where the first id's image lies, if anywhere.
  void finish(SkipReport& skips, const std::string& scanned, const std::vector<std::string>& paths) const;

 private:
  std::string where_, file_name_;
  std::optional<std::string> member_;             // its path inside the data; nullopt when read from disk
  std::vector<std::string> bases_;                // folders (relative to the data, "" or "d/") the ids are relative to
  std::unique_ptr<detail::CsvLabelTable> table_;  // not movable: its reader calls back into it
  std::size_t used_ = 0;

  detail::CsvLabelTable::Row* find(const std::string& path);
  void check_header_names_no_file(const Archive& data) const;
};

struct ClassNames {
  std::string where;                       // the file, for messages
  std::optional<std::string> member;       // its path inside the data; nullopt when read from disk
  std::map<long long, std::string> names;  // label -> name
};

// --class-names read from the data or beside it (nullopt without the option).
std::optional<ClassNames> read_class_names(const Archive& data, const std::filesystem::path& data_path,
                                           const DatasetOptions& options);

// Renames integer classes ("0", "1", ...) by --class-names, keeping their order. Throws
// Error(usage) when a class is not an integer, Error(invalid) when one has no name.
void name_classes(std::vector<std::string>& classes, const ClassNames& names);

}  // namespace frugal
