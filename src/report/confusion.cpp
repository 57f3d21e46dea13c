// The confusion matrix's class order and its drawing as inline SVG.
#include <algorithm>
#include <cmath>
#include <deque>

#include "frugal/report/report.h"
#include "report/page.h"

namespace frugal::report {
namespace {

using Matrix = std::vector<std::vector<std::int64_t>>;

std::int64_t cell(const Matrix& m, std::size_t i, std::size_t j) {
  return i < m.size() && j < m[i].size() ? m[i][j] : 0;
}

// Confusion between two classes, both ways.
std::int64_t both_ways(const Matrix& m, std::size_t i, std::size_t j) {
  return i == j ? 0 : cell(m, i, j) + cell(m, j, i);
}

// Grows `chain` at whichever end the unplaced class most confused with it joins, until no unplaced
// class is confused with either end.
void grow(const Matrix& m, std::deque<int>& chain, std::vector<bool>& placed) {
  const std::size_t n = placed.size();
  for (;;) {
    std::int64_t best = 0;
    int pick = -1;
    bool front = false;
    for (std::size_t k = 0; k < n; ++k) {
      if (placed[k]) continue;
      const std::int64_t b = both_ways(m, k, static_cast<std::size_t>(chain.back()));
      const std::int64_t f = both_ways(m, k, static_cast<std::size_t>(chain.front()));
      if (std::max(b, f) > best) {
        best = std::max(b, f);
        pick = static_cast<int>(k);
        front = f > b;
      }
    }
    if (pick < 0) return;
    placed[static_cast<std::size_t>(pick)] = true;
    if (front)
      chain.push_front(pick);
    else
      chain.push_back(pick);
  }
}

}  // namespace

std::vector<int> cluster_order(const Matrix& confusion) {
  const std::size_t n = confusion.size();
  std::vector<std::int64_t> total(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) total[i] += both_ways(confusion, i, j);
  std::vector<bool> placed(n, false);
  std::vector<int> order;
  for (;;) {
    // Each cluster starts from the unplaced class confused the most overall.
    int seed = -1;
    for (std::size_t k = 0; k < n; ++k)
      if (!placed[k] && total[k] > 0 && (seed < 0 || total[k] > total[static_cast<std::size_t>(seed)]))
        seed = static_cast<int>(k);
    if (seed < 0) break;
    placed[static_cast<std::size_t>(seed)] = true;
    std::deque<int> chain{seed};
    grow(confusion, chain, placed);
    order.insert(order.end(), chain.begin(), chain.end());
  }
  for (std::size_t k = 0; k < n; ++k)
    if (!placed[k]) order.push_back(static_cast<int>(k));
  return order;
}

std::vector<std::pair<int, std::int64_t>> most_confused(const std::vector<std::int64_t>& row, int true_class, int n) {
  std::vector<std::pair<int, std::int64_t>> out;
  for (std::size_t j = 0; j < row.size(); ++j)
    if (static_cast<int>(j) != true_class && row[j] > 0) out.emplace_back(static_cast<int>(j), row[j]);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > static_cast<std::size_t>(std::max(n, 0))) out.resize(static_cast<std::size_t>(std::max(n, 0)));
  return out;
}

namespace {

struct Layout {
  std::size_t n = 0;
  double cell = 0, margin = 0;
  bool labels = false, numbers = false;
  double x(std::size_t j) const { return margin + static_cast<double>(j) * cell; }
  double y(std::size_t i) const { return margin + static_cast<double>(i) * cell; }
};

// The class names along both axes (small matrices), or one hover title per row and column band.
std::string axis_labels(const Layout& l, const std::vector<std::string>& names, const std::vector<int>& order) {
  std::string s;
  for (std::size_t k = 0; k < l.n; ++k) {
    const auto c = static_cast<std::size_t>(order[k]);
    const std::string name = escape_html(c < names.size() ? names[c] : std::to_string(c));
    if (l.labels) {
      s += "<text x=\"" + number(l.margin - 4) + "\" y=\"" + number(l.y(k) + l.cell * 0.7, 6) +
           "\" text-anchor=\"end\">" + name + "</text>";
      s += "<text transform=\"translate(" + number(l.x(k) + l.cell * 0.7, 6) + " " + number(l.margin - 4) +
           ") rotate(-60)\">" + name + "</text>";
    } else {
      s += "<rect x=\"0\" y=\"" + number(l.y(k), 6) + "\" width=\"" + number(l.margin) + "\" height=\"" +
           number(l.cell, 6) + "\" fill=\"#ddd\"><title>true " + name + "</title></rect>";
      s += "<rect y=\"0\" x=\"" + number(l.x(k), 6) + "\" height=\"" + number(l.margin) + "\" width=\"" +
           number(l.cell, 6) + "\" fill=\"#ddd\"><title>predicted " + name + "</title></rect>";
    }
  }
  return s;
}

}  // namespace

std::string matrix_svg(const Matrix& counts, const std::vector<std::string>& classes, const std::vector<int>& order,
                       bool normalised, const std::string& id) {
  Layout l;
  l.n = order.size();
  l.cell = std::clamp(640.0 / static_cast<double>(std::max<std::size_t>(l.n, 1)), 5.0, 40.0);
  l.labels = l.n <= 40;
  l.numbers = l.n <= 25;
  l.margin = l.labels ? 140 : 8;
  std::int64_t largest = 1;
  std::vector<std::int64_t> row_sum(counts.size(), 0);
  for (std::size_t i = 0; i < counts.size(); ++i)
    for (std::int64_t v : counts[i]) {
      row_sum[i] += v;
      largest = std::max(largest, v);
    }
  // Ten shades per colour (diagonal blue, confusions red), one path each: a 100-class matrix stays
  // a few hundred kB however many cells are non-zero.
  std::vector<std::string> paths(20), cells;
  for (std::size_t a = 0; a < l.n; ++a) {
    const auto i = static_cast<std::size_t>(order[a]);
    for (std::size_t b = 0; b < l.n; ++b) {
      const auto j = static_cast<std::size_t>(order[b]);
      const std::int64_t v = cell(counts, i, j);
      if (v <= 0) continue;
      const double share = normalised
                               ? static_cast<double>(v) / static_cast<double>(std::max<std::int64_t>(row_sum[i], 1))
                               : std::sqrt(static_cast<double>(v) / static_cast<double>(largest));
      const auto level = static_cast<std::size_t>(std::clamp(std::ceil(share * 10), 1.0, 10.0)) - 1;
      paths[(i == j ? 0 : 10) + level] += "M" + number(l.x(b), 6) + " " + number(l.y(a), 6) + "h" + number(l.cell, 6) +
                                          "v" + number(l.cell, 6) + "h-" + number(l.cell, 6) + "z";
      if (l.numbers)
        cells.push_back("<text class=\"n\" x=\"" + number(l.x(b) + l.cell / 2, 6) + "\" y=\"" +
                        number(l.y(a) + l.cell * 0.65, 6) + "\" text-anchor=\"middle\">" +
                        (normalised ? number(std::round(share * 100), 3) : std::to_string(v)) + "</text>");
    }
  }
  const double side = l.margin + l.cell * static_cast<double>(l.n) + 4;
  std::string svg = "<svg class=\"matrix\" id=\"" + escape_html(id) + "\" viewBox=\"0 0 " + number(side, 6) + " " +
                    number(side, 6) + "\" width=\"" + number(side, 6) + "\" height=\"" + number(side, 6) +
                    "\" role=\"img\"><rect x=\"" + number(l.margin) + "\" y=\"" + number(l.margin) + "\" width=\"" +
                    number(l.cell * static_cast<double>(l.n), 6) + "\" height=\"" +
                    number(l.cell * static_cast<double>(l.n), 6) + "\" fill=\"#fff\" stroke=\"#bbb\"/>";
  for (std::size_t p = 0; p < paths.size(); ++p)
    if (!paths[p].empty())
      svg += "<path fill=\"" + std::string(p < 10 ? "#1f5fbf" : "#d0431f") + "\" fill-opacity=\"" +
             number(static_cast<double>(p % 10 + 1) / 10) + "\" d=\"" + paths[p] + "\"/>";
  for (const std::string& c : cells) svg += c;
  return svg + axis_labels(l, classes, order) + "</svg>";
}

}  // namespace frugal::report
