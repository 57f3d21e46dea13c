// The parts of the report page (report.h), shared by its files: text, numbers, charts, matrices.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace frugal::report {

// A number for a page: up to `digits` significant digits, "-" for NaN and infinities.
std::string number(double v, int digits = 4);
// A fraction as a percentage with two decimals ("93.75%"), "-" when not finite.
std::string percent(double fraction);
// A JSON value as page text: strings as they are, numbers by number(), others dumped; escaped.
std::string json_cell(const nlohmann::json& v);
// A finite number of a JSON value, or NaN.
double number_of(const nlohmann::json& v);

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
  std::string color;
  bool dashed = false;
};

struct Chart {
  std::string id, title, x_label;
  std::vector<Series> series;
  std::vector<std::pair<double, std::string>> marks;  // vertical lines at x: "... starts", else a cut
};

// An inline SVG line chart (<figure id=...> with a legend); "" when no series has a point.
std::string line_chart(const Chart& chart);

// The confusion matrix of `counts` (true x predicted) in `order` as inline SVG: each row normalised
// to its sum (`normalised`), or raw counts shaded by their share of the largest cell.
std::string matrix_svg(const std::vector<std::vector<std::int64_t>>& counts, const std::vector<std::string>& classes,
                       const std::vector<int>& order, bool normalised, const std::string& id);

}  // namespace frugal::report
