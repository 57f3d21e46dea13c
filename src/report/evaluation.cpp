// The evaluation's sections: the confusion matrix (normalised and raw, classes clustered), the
// classes' precision, recall and F1 with their most confused pairs, the worst predictions; for a
// multi-label run, each tag's AP, precision, recall, F1 and threshold.
#include <algorithm>
#include <cmath>

#include "frugal/report/report.h"
#include "frugal/util/terminal.h"
#include "report/page.h"
#include "report/sections.h"

namespace frugal::report {
namespace {

using Matrix = std::vector<std::vector<std::int64_t>>;
const nlohmann::json kNone;

const nlohmann::json& at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return kNone;
  const auto it = j.find(key);
  return it == j.end() ? kNone : *it;
}

// The confusion matrix when it is square, as wide as the class list, of whole numbers >= 0.
Matrix matrix_of(const nlohmann::json& eval, std::size_t classes) {
  const nlohmann::json& c = at(eval, "confusion");
  Matrix m;
  if (!c.is_array() || c.size() != classes) return {};
  for (const auto& row : c) {
    if (!row.is_array() || row.size() != classes) return {};
    m.emplace_back();
    for (const auto& v : row) {
      if (!v.is_number_integer() && !v.is_number_unsigned()) return {};
      m.back().push_back(std::max<std::int64_t>(v.get<std::int64_t>(), 0));
    }
  }
  return m;
}

std::vector<std::string> classes_of(const nlohmann::json& eval) {
  std::vector<std::string> out;
  for (const auto& c : at(eval, "classes")) out.push_back(c.is_string() ? c.get<std::string>() : json_text(c));
  return out;
}

std::string name_of(const std::vector<std::string>& classes, int i) {
  return i >= 0 && static_cast<std::size_t>(i) < classes.size() ? classes[static_cast<std::size_t>(i)]
                                                                : std::to_string(i);
}

std::string confusion_section(const Matrix& m, const std::vector<std::string>& classes) {
  const std::vector<int> order = cluster_order(m);
  std::string out =
      "<section id=\"confusion\"><h2>Confusion matrix</h2><p>Rows: the true class; columns: the "
      "predicted one. Classes are ordered so that those confused with each other sit together. "
      "Hover a cell band for its class.</p><div class=\"matrices\"><figure><figcaption>Normalised "
      "(each row sums to 1)</figcaption>" +
      matrix_svg(m, classes, order, true, "confusion-normalised") +
      "</figure><figure><figcaption>Raw counts</figcaption>" + matrix_svg(m, classes, order, false, "confusion-raw") +
      "</figure></div>";
  // The most confused pairs of the whole matrix.
  std::vector<std::tuple<std::int64_t, int, int>> pairs;
  std::vector<std::int64_t> support(m.size(), 0);
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < m.size(); ++j) {
      support[i] += m[i][j];
      if (i != j && m[i][j] > 0) pairs.emplace_back(m[i][j], static_cast<int>(i), static_cast<int>(j));
    }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  if (pairs.size() > 20) pairs.resize(20);
  out +=
      "<h3>Most confused pairs</h3><table id=\"confused-pairs\"><tr><th>true</th><th>predicted as</th><th>images</th>"
      "<th>of the true class</th></tr>";
  for (const auto& [n, i, j] : pairs)
    out += "<tr><td>" + escape_html(name_of(classes, i)) + "</td><td>" + escape_html(name_of(classes, j)) +
           "</td><td>" + std::to_string(n) + "</td><td>" +
           percent(static_cast<double>(n) / static_cast<double>(support[static_cast<std::size_t>(i)])) + "</td></tr>";
  if (pairs.empty()) out += "<tr><td colspan=\"4\">no confusions</td></tr>";
  return out + "</table></section>";
}

std::string score_row(const std::string& name, const nlohmann::json& r, const std::string& confused) {
  return "<tr><td>" + name + "</td><td>" + percent(number_of(at(r, "precision"))) + "</td><td>" +
         percent(number_of(at(r, "recall"))) + "</td><td>" + percent(number_of(at(r, "f1"))) + "</td><td>" +
         json_cell(at(r, "support")) + "</td><td>" + confused + "</td></tr>";
}

std::string per_class_section(const nlohmann::json& eval, const Matrix& m, const std::vector<std::string>& classes) {
  // eval --json's "per_class_report" (its "per_class" is each class's accuracy by name).
  const nlohmann::json& rows =
      at(eval, "per_class_report").is_array() ? at(eval, "per_class_report") : at(eval, "per_class");
  if (!rows.is_array()) return "";
  std::string out =
      "<section id=\"per-class\"><h2>Per class</h2><table id=\"per-class-table\"><tr><th>class</th>"
      "<th>precision</th><th>recall</th><th>F1</th><th>support</th><th>most confused with</th></tr>";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string confused;
    if (i < m.size())
      for (const auto& [j, n] : most_confused(m[i], static_cast<int>(i), 3))
        confused += (confused.empty() ? "" : ", ") + escape_html(name_of(classes, j)) + " (" + std::to_string(n) + ")";
    out += score_row(json_cell(at(rows[i], "class")), rows[i], confused);
  }
  for (const char* avg : {"macro", "weighted"})
    if (at(eval, avg).is_object()) out += score_row(std::string("<b>") + avg + " average</b>", at(eval, avg), "");
  return out + "</table></section>";
}

// A multi-label run's tags (eval --json's multi-label "per_class": {tag: {ap, precision, recall,
// f1, positives, best_threshold}}), with the threshold each was counted at ("thresholds": one
// for all, or one per tag in the classes' order).
std::string per_tag_section(const nlohmann::json& eval) {
  const nlohmann::json& rows = at(eval, "per_class");
  if (!rows.is_object()) return "";
  const nlohmann::json& thresholds = at(eval, "thresholds");
  const std::vector<std::string> classes = classes_of(eval);
  std::string out =
      "<section id=\"per-tag\"><h2>Per tag</h2><p>Mean AP " + percent(number_of(at(eval, "mean_ap"))) + ", F1 " +
      percent(number_of(at(eval, "f1"))) + " (precision " + percent(number_of(at(eval, "precision"))) + ", recall " +
      percent(number_of(at(eval, "recall"))) + "), all tags right on " + percent(number_of(at(eval, "exact_match"))) +
      " of the images.</p><table id=\"per-tag-table\"><tr><th>tag</th><th>AP</th><th>precision</th><th>recall</th>"
      "<th>F1</th><th>images with it</th><th>threshold</th><th>best threshold (F1)</th></tr>";
  for (const auto& [tag, r] : rows.items()) {
    const auto pos = std::find(classes.begin(), classes.end(), tag);
    const std::size_t i = static_cast<std::size_t>(pos - classes.begin());
    const nlohmann::json& t = !thresholds.is_array()   ? kNone
                              : thresholds.size() == 1 ? thresholds[0]
                              : i < thresholds.size()  ? thresholds[i]
                                                       : kNone;
    out += "<tr><td>" + escape_html(tag) + "</td><td>" + percent(number_of(at(r, "ap"))) + "</td><td>" +
           percent(number_of(at(r, "precision"))) + "</td><td>" + percent(number_of(at(r, "recall"))) + "</td><td>" +
           percent(number_of(at(r, "f1"))) + "</td><td>" + json_cell(at(r, "positives")) + "</td><td>" +
           number(number_of(t), 3) + "</td><td>" + number(number_of(at(r, "best_threshold")), 3) + "</td></tr>";
  }
  return out + "</table></section>";
}

// Only an image data: URI of base64 text is put in src.
bool safe_image_uri(const std::string& s) {
  std::size_t start = 0;
  for (const char* prefix : {"data:image/png;base64,", "data:image/jpeg;base64,"})
    if (s.rfind(prefix, 0) == 0) start = std::string(prefix).size();
  if (start == 0) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(start), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
  });
}

std::string worst_section(const nlohmann::json& eval) {
  const nlohmann::json& worst = at(eval, "worst");
  if (!worst.is_array() || worst.empty()) return "";
  std::string out =
      "<section id=\"worst\"><h2>Worst predictions</h2><p>The validation images with the highest "
      "loss, worst first.</p><div class=\"thumbs\">";
  for (const auto& w : worst) {
    const nlohmann::json& uri = at(w, "thumbnail");
    const std::string img =
        uri.is_string() && safe_image_uri(uri.get<std::string>())
            ? "<img class=\"thumb\" src=\"" + uri.get<std::string>() + "\" alt=\"" + json_cell(at(w, "name")) + "\">"
            : "<div class=\"nothumb\">no image</div>";
    out += "<figure class=\"worst\">" + img + "<figcaption><span class=\"name\">" + json_cell(at(w, "name")) +
           "</span><br>true <b>" + json_cell(at(w, "true")) + "</b><br>predicted <b>" + json_cell(at(w, "predicted")) +
           "</b> " + percent(number_of(at(w, "probability"))) + "<br>loss " + number(number_of(at(w, "loss"))) +
           "</figcaption></figure>";
  }
  return out + "</div></section>";
}

}  // namespace

std::string evaluation_sections(const nlohmann::json& eval) {
  if (!eval.is_object()) return "";
  if (at(eval, "multi_label") == true) return per_tag_section(eval);
  const std::vector<std::string> classes = classes_of(eval);
  const Matrix m = matrix_of(eval, classes.size());
  std::string out;
  if (!m.empty()) out += confusion_section(m, classes);
  return out + per_class_section(eval, m, classes) + worst_section(eval);
}

}  // namespace frugal::report
