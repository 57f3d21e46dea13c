// The confusion matrix's figures and the worst predictions (frugal/training/classification_report.h).
#include "frugal/training/classification_report.h"

#include <algorithm>
#include <cstdio>

#include "frugal/util/error.h"
#include "frugal/util/terminal.h"

namespace frugal {
namespace {

// a / b, or 0 where b is 0 (sklearn's zero_division=0).
double ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

// np.average(values, weights=weights): sum(v * w) / sum(w), both summed pairwise; unweighted when
// every weight is 0 (sklearn's _nanaverage).
double weighted_average(const std::vector<double>& values, const std::vector<double>& weights) {
  std::vector<double> products(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) products[i] = values[i] * weights[i];
  const double scale = pairwise_sum(weights.data(), weights.size());
  if (scale == 0) return values.empty() ? 0.0 : pairwise_sum(values.data(), values.size()) / double(values.size());
  return pairwise_sum(products.data(), products.size()) / scale;
}

// Who leaves the heap first: the lower loss, and among equal losses the later sample.
bool kept_longer(const Prediction& a, const Prediction& b) {
  if (a.loss != b.loss) return a.loss > b.loss;
  return a.sample < b.sample;
}

std::string class_name(const std::vector<std::string>& classes, std::int64_t i) {
  return i >= 0 && static_cast<std::size_t>(i) < classes.size() ? classes[static_cast<std::size_t>(i)]
                                                                : std::to_string(i);
}

// A name for a fixed-width column: printable, at most `width` characters ("..." where cut).
std::string column_name(const std::string& name, std::size_t width) {
  std::string p = printable(name);
  if (p.size() > width) p = p.substr(0, width - 3) + "...";
  return p;
}

// `s` right-aligned in `width` characters (left-aligned when `left`).
std::string padded(const std::string& s, std::size_t width, bool left = false) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

nlohmann::json scores_json(const ClassScores& s) {
  return {{"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"support", s.support}};
}

}  // namespace

double pairwise_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {  // NumPy's PW_BLOCKSIZE: eight running sums, then the rest one by one
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

ClassificationReport classification_report(const ConfusionMatrix& confusion) {
  const std::size_t n = confusion.size();
  for (const auto& row : confusion)
    if (row.size() != n)
      fail(ErrorKind::invalid, "confusion matrix", "as many columns as rows (" + std::to_string(n) + ")",
           "a row of " + std::to_string(row.size()), "count predictions over the model's classes");
  ClassificationReport r;
  std::vector<std::int64_t> predicted(n, 0);
  std::int64_t right = 0;
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t p = 0; p < n; ++p) {
      predicted[p] += confusion[t][p];
      r.samples += confusion[t][p];
      if (t == p) right += confusion[t][p];
    }
  std::vector<double> precision(n), recall(n), f1(n), support(n);
  for (std::size_t c = 0; c < n; ++c) {
    ClassScores s;
    std::int64_t tp = confusion[c][c];
    for (std::int64_t v : confusion[c]) s.support += v;
    s.precision = ratio(double(tp), double(predicted[c]));
    s.recall = ratio(double(tp), double(s.support));
    s.f1 = ratio(2.0 * double(tp), double(s.support) + double(predicted[c]));  // sklearn's F-beta at beta 1
    precision[c] = s.precision, recall[c] = s.recall, f1[c] = s.f1, support[c] = double(s.support);
    r.per_class.push_back(s);
  }
  r.accuracy = ratio(double(right), double(r.samples));
  if (n == 0) return r;
  auto mean = [n](const std::vector<double>& v) { return pairwise_sum(v.data(), n) / double(n); };
  r.macro = {mean(precision), mean(recall), mean(f1), r.samples};
  r.weighted = {weighted_average(precision, support), weighted_average(recall, support), weighted_average(f1, support),
                r.samples};
  return r;
}

void WorstPredictions::add(Prediction p) {
  if (limit_ == 0) return;
  if (heap_.size() < limit_) {
    heap_.push_back(std::move(p));
    std::push_heap(heap_.begin(), heap_.end(), kept_longer);
    return;
  }
  if (!kept_longer(p, heap_.front())) return;
  std::pop_heap(heap_.begin(), heap_.end(), kept_longer);
  heap_.back() = std::move(p);
  std::push_heap(heap_.begin(), heap_.end(), kept_longer);
}

std::vector<Prediction> WorstPredictions::sorted() const {
  std::vector<Prediction> out = heap_;
  std::sort(out.begin(), out.end(), kept_longer);
  return out;
}

nlohmann::json classification_json(const ConfusionMatrix& confusion, const ClassificationReport& report,
                                   const std::vector<std::string>& classes) {
  nlohmann::json per = nlohmann::json::array();
  for (std::size_t c = 0; c < report.per_class.size(); ++c) {
    nlohmann::json s = scores_json(report.per_class[c]);
    s["class"] = class_name(classes, static_cast<std::int64_t>(c));
    per.push_back(std::move(s));
  }
  return {{"classes", classes},
          {"confusion", confusion},
          {"per_class_report", per},
          {"macro", scores_json(report.macro)},
          {"weighted", scores_json(report.weighted)}};
}

nlohmann::json worst_json(const std::vector<Prediction>& worst, const std::vector<std::string>& classes) {
  nlohmann::json out = nlohmann::json::array();
  for (const Prediction& p : worst)
    out.push_back({{"name", p.name},
                   {"true", class_name(classes, p.true_class)},
                   {"predicted", class_name(classes, p.predicted)},
                   {"probability", p.probability},
                   {"loss", p.loss}});
  return out;
}

std::string confusion_text(const ConfusionMatrix& confusion, const ClassificationReport& report,
                           const std::vector<std::string>& classes) {
  std::int64_t most = 0;
  for (const auto& row : confusion)
    for (std::int64_t v : row) most = std::max(most, v);
  const std::size_t cell = std::max(std::to_string(most).size(), std::to_string(confusion.size()).size()) + 1;
  const std::size_t name_width = 24, label_width = name_width + 6;
  std::string out = "confusion matrix (rows: true class, columns: predicted class, numbered as the rows)\n";
  out += std::string(label_width, ' ');
  for (std::size_t p = 0; p < confusion.size(); ++p) out += padded(std::to_string(p), cell);
  out += "\n";
  for (std::size_t t = 0; t < confusion.size(); ++t) {
    out += padded(std::to_string(t), 4) + "  " +
           padded(column_name(class_name(classes, static_cast<std::int64_t>(t)), name_width), name_width, true);
    for (std::int64_t v : confusion[t]) out += padded(std::to_string(v), cell);
    out += "\n";
  }
  out += "\n" + padded("class", label_width, true) + padded("precision", 10) + padded("recall", 10) +
         padded("f1-score", 10) + padded("support", 10) + "\n";
  auto line = [&](const std::string& name, const ClassScores& s) {
    char figures[96];
    std::snprintf(figures, sizeof figures, "%10.4f%10.4f%10.4f%10lld", s.precision, s.recall, s.f1,
                  static_cast<long long>(s.support));
    out += padded(column_name(name, label_width), label_width, true) + figures + "\n";
  };
  for (std::size_t c = 0; c < report.per_class.size(); ++c)
    line(class_name(classes, static_cast<std::int64_t>(c)), report.per_class[c]);
  line("macro avg", report.macro);
  line("weighted avg", report.weighted);
  return out;
}

std::string worst_text(const std::vector<Prediction>& worst, const std::vector<std::string>& classes) {
  std::string out = "the " + std::to_string(worst.size()) + (worst.size() == 1 ? " image" : " images") +
                    " of highest loss (name, true class, predicted class, its probability, loss)\n";
  char buf[64];
  for (const Prediction& p : worst) {
    std::snprintf(buf, sizeof buf, " %.4f %.4f", p.probability, p.loss);
    out += "  " + printable(p.name) + "  " + printable(class_name(classes, p.true_class)) + " -> " +
           printable(class_name(classes, p.predicted)) + buf + "\n";
  }
  return out;
}

}  // namespace frugal
