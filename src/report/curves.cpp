// The report's curves: metrics.jsonl's lines and the events files' scalars against steps and
// wall time, sessions marked, and the sessions' table.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "frugal/report/report.h"
#include "report/page.h"
#include "report/sections.h"

namespace frugal::report {
namespace {

using Points = std::vector<std::pair<double, double>>;

struct History {
  std::map<std::string, Points> metrics, events;  // key -> (step, value)
  std::map<double, double> wall;                  // step -> the earliest wall time recorded at it
  std::vector<std::pair<double, std::string>> marks;
  double start = NAN;  // the first session's start, Unix seconds
  double unit = 3600;  // wall time in hours, or in minutes for a run of under two hours
  std::string wall_label() const {
    return unit == 60 ? "minutes since the first session began" : "hours since the first session began";
  }
};

History history_of(const nlohmann::json& doc) {
  History h;
  if (const auto it = doc.find("metrics"); it != doc.end() && it->is_array())
    for (const auto& line : *it) {
      if (!line.is_object()) continue;
      const double step = number_of(line.value("step", nlohmann::json()));
      if (std::isnan(step)) continue;
      for (const auto& [key, v] : line.items())
        if (key != "step" && key != "epoch" && v.is_number()) h.metrics[key].emplace_back(step, number_of(v));
    }
  const auto sessions = doc.find("sessions");
  if (sessions == doc.end() || !sessions->is_array()) return h;
  for (std::size_t i = 0; i < sessions->size(); ++i) {
    const auto& s = (*sessions)[i];
    if (!s.is_object()) continue;
    const double first = number_of(s.value("first_step", nlohmann::json())),
                 t0 = number_of(s.value("start", nlohmann::json()));
    if (!std::isnan(t0) && (std::isnan(h.start) || t0 < h.start)) h.start = t0;
    if (!std::isnan(first)) h.marks.emplace_back(first, "session " + std::to_string(i + 1) + " starts");
    const auto scalars = s.find("scalars");
    if (scalars == s.end() || !scalars->is_object()) continue;
    for (const auto& [tag, rows] : scalars->items())
      for (const auto& r : rows) {
        if (!r.is_array() || r.size() < 3) continue;
        const double step = number_of(r[0]), wall = number_of(r[1]);
        if (std::isnan(step)) continue;
        h.events[tag].emplace_back(step, number_of(r[2]));
        if (!std::isnan(wall) && (!h.wall.count(step) || wall < h.wall[step])) h.wall[step] = wall;
      }
  }
  if (!h.wall.empty() && !std::isnan(h.start)) {
    double last = h.start;
    for (const auto& [step, wall] : h.wall) last = std::max(last, wall);
    if (last - h.start < 7200) h.unit = 60;
  }
  return h;
}

// The first of `keys` that metrics.jsonl has, else that the events files have.
Points pick(const History& h, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (const auto it = h.metrics.find(k); it != h.metrics.end()) return it->second;
  for (const char* k : keys)
    if (const auto it = h.events.find(k); it != h.events.end()) return it->second;
  return {};
}

Points sorted(Points p) {
  std::stable_sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return p;
}

// Points against the time since the run's first session began (steps whose wall time is known).
Points by_hours(const History& h, const Points& by_step) {
  Points out;
  if (std::isnan(h.start)) return out;
  for (const auto& [step, v] : by_step)
    if (const auto it = h.wall.find(step); it != h.wall.end()) out.emplace_back((it->second - h.start) / h.unit, v);
  return sorted(out);
}

Chart chart(const std::string& id, const std::string& title, const std::string& x_label, const History& h) {
  Chart c;
  c.id = id;
  c.title = title;
  c.x_label = x_label;
  if (x_label == "step") c.marks = h.marks;
  return c;
}

void add(Chart& c, const std::string& name, Points p, const char* color, bool dashed = false) {
  if (!p.empty()) c.series.push_back({name, sorted(std::move(p)), color, dashed});
}

}  // namespace

std::string utc_time(double unix_seconds) {
  if (!std::isfinite(unix_seconds)) return "-";
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string curves_section(const nlohmann::json& doc) {
  const History h = history_of(doc);
  const Points train_fine = pick(h, {"train/loss"}), train_epoch = pick(h, {"train_loss"}),
               val_loss = pick(h, {"val_loss", "val/loss"}), val_acc = pick(h, {"val_accuracy", "val/accuracy"});
  std::vector<Chart> charts;
  Chart loss = chart("chart-loss", "Loss against steps", "step", h);
  add(loss, "train loss", train_fine, "#888");
  add(loss, "train loss (epoch mean)", train_epoch, "#1f5fbf");
  add(loss, "validation loss", val_loss, "#d0431f");
  charts.push_back(loss);
  Chart acc = chart("chart-accuracy", "Validation accuracy against steps", "step", h);
  add(acc, "validation accuracy", val_acc, "#2a8f3a");
  add(acc, "validation mean AP", pick(h, {"val_mean_ap"}), "#7a3fbf");
  charts.push_back(acc);
  Chart lr = chart("chart-lr", "Learning rate", "step", h);
  add(lr, "learning rate", pick(h, {"train/lr", "lr"}), "#7a3fbf");
  charts.push_back(lr);
  Chart speed = chart("chart-speed", "Images per second", "step", h);
  add(speed, "images/s", pick(h, {"train/images_per_s", "images_per_s"}), "#1f5fbf");
  charts.push_back(speed);
  Chart scale = chart("chart-loss-scale", "Loss scale (fp16)", "step", h);
  add(scale, "loss scale", pick(h, {"train/loss_scale"}), "#b07a00");
  charts.push_back(scale);
  Chart plan = chart("chart-plan", "Time budget: planned steps against steps done", h.wall_label(), h);
  Points done;
  for (const auto& [step, wall] : h.wall) done.emplace_back(step, step);
  add(plan, "planned steps (budget/planned_steps)", by_hours(h, pick(h, {"budget/planned_steps"})), "#b07a00", true);
  if (!plan.series.empty()) add(plan, "steps done", by_hours(h, done), "#1f5fbf");
  charts.push_back(plan);
  Chart wall = chart("chart-wall", "Loss and accuracy against wall time", h.wall_label(), h);
  add(wall, "train loss", by_hours(h, train_fine.empty() ? train_epoch : train_fine), "#1f5fbf");
  add(wall, "validation loss", by_hours(h, val_loss), "#d0431f");
  add(wall, "validation accuracy", by_hours(h, val_acc), "#2a8f3a");
  charts.push_back(wall);
  std::string out = "<section id=\"curves\"><h2>Training curves</h2><div class=\"charts\">";
  std::string missing;
  for (const Chart& c : charts) {
    const std::string svg = line_chart(c);
    out += svg;
    if (svg.empty()) missing += (missing.empty() ? "" : "; ") + escape_html(c.title);
  }
  out += "</div>";
  if (!missing.empty()) out += "<p class=\"note\">Not recorded by this run: " + missing + ".</p>";
  return out + "</section>";
}

std::string sessions_table(const nlohmann::json& doc) {
  const auto sessions = doc.find("sessions");
  if (sessions == doc.end() || !sessions->is_array() || sessions->empty()) return "";
  std::string out =
      "<h3>Sessions</h3><table id=\"sessions\"><tr><th>#</th><th>began</th><th>last record</th>"
      "<th>hours</th><th>steps</th><th>events file</th></tr>";
  for (std::size_t i = 0; i < sessions->size(); ++i) {
    const auto& s = (*sessions)[i];
    if (!s.is_object()) continue;
    const double a = number_of(s.value("start", nlohmann::json())), b = number_of(s.value("end", nlohmann::json()));
    out += "<tr><td>" + std::to_string(i + 1) + "</td><td>" + utc_time(a) + "</td><td>" + utc_time(b) + "</td><td>" +
           number((b - a) / 3600, 3) + "</td><td>" + json_cell(s.value("first_step", nlohmann::json())) + " to " +
           json_cell(s.value("last_step", nlohmann::json())) + "</td><td>" +
           json_cell(s.value("file", nlohmann::json())) + "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace frugal::report
