// Line charts as inline SVG: axes with round ticks, one polyline per series, session marks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frugal/report/report.h"
#include "report/page.h"

namespace frugal::report {
namespace {

constexpr double kWidth = 640, kHeight = 240, kLeft = 64, kRight = 16, kTop = 12, kBottom = 40;

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  void widen() {  // a single value gets a range around it
    if (hi > lo) return;
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
};

// About `n` ticks at 1, 2 or 5 times a power of ten covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= raw) {
      step = p * m;
      break;
    }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9 && out.size() < 20; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

struct Frame {
  Range x, y;
  double px(double v) const { return kLeft + (v - x.lo) / (x.hi - x.lo) * (kWidth - kLeft - kRight); }
  double py(double v) const { return kHeight - kBottom - (v - y.lo) / (y.hi - y.lo) * (kHeight - kTop - kBottom); }
};

std::string axes(const Frame& f, const std::string& x_label) {
  std::string s = "<rect x=\"" + number(kLeft) + "\" y=\"" + number(kTop) + "\" width=\"" +
                  number(kWidth - kLeft - kRight) + "\" height=\"" + number(kHeight - kTop - kBottom) +
                  "\" fill=\"none\" stroke=\"#999\"/>";
  for (double v : ticks(f.x.lo, f.x.hi, 6))
    s += "<text x=\"" + number(f.px(v), 6) + "\" y=\"" + number(kHeight - kBottom + 14) + "\" text-anchor=\"middle\">" +
         number(v) + "</text>";
  for (double v : ticks(f.y.lo, f.y.hi, 4))
    s += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kWidth - kRight) + "\" y1=\"" + number(f.py(v), 6) +
         "\" y2=\"" + number(f.py(v), 6) + "\" stroke=\"#eee\"/><text x=\"" + number(kLeft - 4) + "\" y=\"" +
         number(f.py(v) + 4, 6) + "\" text-anchor=\"end\">" + number(v) + "</text>";
  s += "<text x=\"" + number((kLeft + kWidth - kRight) / 2) + "\" y=\"" + number(kHeight - 6) +
       "\" text-anchor=\"middle\">" + escape_html(x_label) + "</text>";
  return s;
}

std::string series_svg(const Frame& f, const Series& s) {
  std::string pts;
  for (const auto& [x, y] : s.points) {
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    pts += number(f.px(x), 6) + "," + number(f.py(y), 6) + " ";
  }
  std::string out = "<polyline class=\"series\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\"" +
                    (s.dashed ? " stroke-dasharray=\"5 3\"" : "") + " points=\"" + pts + "\"><title>" +
                    escape_html(s.name) + "</title></polyline>";
  if (s.points.size() <= 60)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y))
        out += "<circle cx=\"" + number(f.px(x), 6) + "\" cy=\"" + number(f.py(y), 6) + "\" r=\"2.5\" fill=\"" +
               s.color + "\"><title>" + escape_html(s.name) + " " + number(y) + " at " + number(x) +
               "</title></circle>";
  return out;
}

}  // namespace

std::string line_chart(const Chart& chart) {
  Frame f;
  for (const Series& s : chart.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      f.x.add(x);
      f.y.add(y);
    }
  if (f.x.empty()) return "";
  f.x.widen();
  f.y.widen();
  std::string svg = "<figure class=\"chart\" id=\"" + escape_html(chart.id) + "\"><figcaption>" +
                    escape_html(chart.title) + "</figcaption><svg viewBox=\"0 0 " + number(kWidth) + " " +
                    number(kHeight) + "\" width=\"" + number(kWidth) + "\" height=\"" + number(kHeight) +
                    "\" role=\"img\">" + axes(f, chart.x_label);
  bool cuts = false;
  for (const auto& [x, label] : chart.marks) {
    if (x < f.x.lo || x > f.x.hi) continue;
    // A session's start, or where it was cut ("session N cut at step S: deadline", "... killed ...").
    const bool start = label.size() >= 6 && label.compare(label.size() - 6, 6, "starts") == 0;
    cuts = cuts || !start;
    svg += std::string("<line class=\"mark") + (start ? "" : " cut") + "\" x1=\"" + number(f.px(x), 6) + "\" x2=\"" +
           number(f.px(x), 6) + "\" y1=\"" + number(kTop) + "\" y2=\"" + number(kHeight - kBottom) + "\" stroke=\"" +
           (start ? "#c60" : "#c00") + "\" stroke-dasharray=\"2 2\"><title>" + escape_html(label) + "</title></line>";
  }
  for (const Series& s : chart.series) svg += series_svg(f, s);
  svg += "</svg><div class=\"legend\">";
  for (const Series& s : chart.series)
    if (!s.points.empty())
      svg += "<span><i style=\"background:" + s.color + "\"></i>" + escape_html(s.name) + "</span>";
  if (!chart.marks.empty()) svg += "<span><i style=\"background:#c60\"></i>session start</span>";
  if (cuts) svg += "<span><i style=\"background:#c00\"></i>session cut (deadline, signal) or killed</span>";
  return svg + "</div></figure>";
}

}  // namespace frugal::report
