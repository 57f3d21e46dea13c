// Text and numbers for the report page: HTML escaping and number formats.
#include <cmath>
#include <cstdio>

#include "frugal/report/report.h"
#include "frugal/util/terminal.h"
#include "report/page.h"

namespace frugal::report {

std::string escape_html(std::string_view text) {
  // printable(): control characters, bytes that are not UTF-8 and direction overrides become
  // visible escapes (\x1b, \u202e), so a name cannot reorder or hide what the page shows.
  const std::string shown = printable(text);
  std::string out;
  out.reserve(shown.size() + shown.size() / 8);
  for (char c : shown) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%%", fraction * 100);
  return buf;
}

double number_of(const nlohmann::json& v) {
  if (!v.is_number()) return std::nan("");
  const double d = v.get<double>();
  return std::isfinite(d) ? d : std::nan("");
}

std::string json_cell(const nlohmann::json& v) {
  if (v.is_string()) return escape_html(v.get<std::string>());
  if (v.is_number_integer() || v.is_number_unsigned()) return escape_html(v.dump());
  if (v.is_number()) return number(v.get<double>(), 6);
  if (v.is_null()) return "-";
  return escape_html(json_text(v));
}

}  // namespace frugal::report
