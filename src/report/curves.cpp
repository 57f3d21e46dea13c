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
  std::map<std::string, Points> fine;             // metrics.jsonl's "train_points": tag -> (step, value)
  std::vector<std::string> endings;               // per session: how it ended, as the sessions' table says it
  std::map<double, double> wall;                  // step -> the earliest wall time recorded at it
  std::vector<std::pair<double, std::string>> marks;
  double start = NAN;  // the first session's start, Unix seconds
  double unit = 3600;  // wall time in hours, or in minutes for a run of under two hours
  std::string wall_label() const {
    return unit == 60 ? "minutes since the first session began" : "hours since the first session began";
  }
};

void add_wall(History& h, double step, double wall) {
  if (!std::isnan(wall) && (!h.wall.count(step) || wall < h.wall[step])) h.wall[step] = wall;
}

// A line's "train_points" ({"step": [...], "time": [...], TAG: [...]}, docs/formats.md): the fine
// curve's points, and their wall times.
void read_points(History& h, const nlohmann::json& points) {
  if (!points.is_object()) return;
  const auto steps = points.find("step");
  if (steps == points.end() || !steps->is_array()) return;
  const auto times = points.find("time");
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const double step = number_of((*steps)[i]);
    if (std::isnan(step)) continue;
    if (times != points.end() && times->is_array() && i < times->size()) add_wall(h, step, number_of((*times)[i]));
    for (const auto& [tag, values] : points.items())
      if (tag != "step" && tag != "time" && values.is_array() && i < values.size())
        if (const double v = number_of(values[i]); !std::isnan(v)) h.fine[tag].emplace_back(step, v);
  }
}

void read_metrics_line(History& h, const nlohmann::json& line) {
  if (!line.is_object()) return;
  if (const auto p = line.find("train_points"); p != line.end()) read_points(h, *p);
  const double step = number_of(line.value("step", nlohmann::json()));
  if (std::isnan(step)) return;
  for (const auto& [key, v] : line.items())
    if (key != "step" && key != "epoch" && v.is_number()) h.metrics[key].emplace_back(step, number_of(v));
}

std::string step_text(double step) { return std::to_string(static_cast<long long>(step)); }

// A session's events file's last "session/end" scalar (train writes it as a session ends by itself,
// docs/formats.md): (step, reason), else (NaN, "").
std::pair<double, std::string> session_end(const nlohmann::json& session) {
  const auto scalars = session.find("scalars");
  if (scalars == session.end() || !scalars->is_object()) return {NAN, ""};
  const auto rows = scalars->find("session/end");
  if (rows == scalars->end() || !rows->is_array() || rows->empty() || !rows->back().is_array() ||
      rows->back().size() < 3)
    return {NAN, ""};
  const nlohmann::json& r = rows->back();
  static const char* const kReasons[] = {"done", "deadline", "signal", "no room", "undecodable validation images"};
  const double code = number_of(r[2]);
  const std::string reason = code >= 0 && code < 5 ? kReasons[static_cast<int>(code)] : "stopped";
  return {number_of(r[0]), reason};
}

// Each session's start marked, and where one was cut: "session N cut at step S: REASON" (its
// "session/end"), or "session N killed after step L" when a later session began and it has none
// (only in a run that records ends at all: an earlier frugal's runs record none).
void session_marks(History& h, const nlohmann::json& sessions) {
  std::vector<std::pair<double, std::string>> ends;
  bool any_end = false;
  for (const auto& s : sessions) {
    ends.push_back(s.is_object() ? session_end(s) : std::pair<double, std::string>{NAN, ""});
    any_end = any_end || !ends.back().second.empty();
  }
  h.endings.assign(sessions.size(), "-");
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const auto& s = sessions[i];
    if (!s.is_object()) continue;
    const std::string n = "session " + std::to_string(i + 1);
    const double first = number_of(s.value("first_step", nlohmann::json())),
                 last = number_of(s.value("last_step", nlohmann::json()));
    const auto& [step, reason] = ends[i];
    if (!std::isnan(first)) h.marks.emplace_back(first, n + " starts");
    if (reason == "done") {
      h.endings[i] = "done at step " + step_text(step);
    } else if (!reason.empty() && !std::isnan(step)) {
      h.endings[i] = "cut at step " + step_text(step) + ": " + reason;
      h.marks.emplace_back(step, n + " " + h.endings[i]);
    } else if (i + 1 < sessions.size() && any_end && !std::isnan(last)) {
      h.endings[i] = "killed (no end recorded) after step " + step_text(last);
      h.marks.emplace_back(last, n + " " + h.endings[i]);
    }
  }
}

History history_of(const nlohmann::json& doc) {
  History h;
  if (const auto it = doc.find("metrics"); it != doc.end() && it->is_array())
    for (const auto& line : *it) read_metrics_line(h, line);
  const auto sessions = doc.find("sessions");
  if (sessions == doc.end() || !sessions->is_array()) return h;
  session_marks(h, *sessions);
  for (std::size_t i = 0; i < sessions->size(); ++i) {
    const auto& s = (*sessions)[i];
    if (!s.is_object()) continue;
    const double t0 = number_of(s.value("start", nlohmann::json()));
    if (!std::isnan(t0) && (std::isnan(h.start) || t0 < h.start)) h.start = t0;
    const auto scalars = s.find("scalars");
    if (scalars == s.end() || !scalars->is_object()) continue;
    for (const auto& [tag, rows] : scalars->items())
      for (const auto& r : rows) {
        if (!r.is_array() || r.size() < 3) continue;
        const double step = number_of(r[0]), wall = number_of(r[1]);
        if (std::isnan(step)) continue;
        h.events[tag].emplace_back(step, number_of(r[2]));
        add_wall(h, step, wall);
      }
  }
  if (!h.wall.empty() && !std::isnan(h.start)) {
    double last = h.start;
    for (const auto& [step, wall] : h.wall) last = std::max(last, wall);
    if (last - h.start < 7200) h.unit = 60;
  }
  return h;
}

// The training curve's points of `tag` (train/lr, ...): metrics.jsonl's "train_points", and the
// events files' for the steps those lack (points after a session's last epoch record).
Points fine(const History& h, const char* tag) {
  std::map<double, double> by_step;
  if (const auto it = h.fine.find(tag); it != h.fine.end()) by_step.insert(it->second.begin(), it->second.end());
  if (const auto it = h.events.find(tag); it != h.events.end()) by_step.insert(it->second.begin(), it->second.end());
  return Points(by_step.begin(), by_step.end());
}

// The first of `keys` that metrics.jsonl has, else that the events files have.
Points pick(const History& h, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (const auto it = h.metrics.find(k); it != h.metrics.end()) return it->second;
  for (const char* k : keys)
    if (const auto it = h.events.find(k); it != h.events.end()) return it->second;
  return {};
}

// The fine points of `tag`, else (a run without a training curve) the per-epoch `epoch_keys`.
Points fine_or(const History& h, const char* tag, std::initializer_list<const char*> epoch_keys) {
  Points p = fine(h, tag);
  return p.empty() ? pick(h, epoch_keys) : p;
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
  // A record's wall time is any double: past year 9999 (or NaN) it is no time at all, and the
  // cast below would overflow (found by fuzz/report_fuzz.cpp).
  if (!std::isfinite(unix_seconds) || std::abs(unix_seconds) > 253402300799.0) return "-";
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

namespace {

// Loss and accuracy against steps and against wall time.
void learning_charts(const History& h, std::vector<Chart>& charts) {
  const Points train_fine = fine(h, "train/loss"), train_epoch = pick(h, {"train_loss"}),
               val_loss = pick(h, {"val_loss", "val/loss"}), val_acc = pick(h, {"val_accuracy", "val/accuracy"});
  Chart loss = chart("chart-loss", "Loss against steps", "step", h);
  add(loss, "train loss", train_fine, "#888");
  add(loss, "train loss (epoch mean)", train_epoch, "#1f5fbf");
  add(loss, "validation loss", val_loss, "#d0431f");
  charts.push_back(loss);
  Chart acc = chart("chart-accuracy", "Accuracy against steps", "step", h);
  add(acc, "train accuracy (epoch mean)", pick(h, {"train_accuracy"}), "#1f5fbf");
  add(acc, "validation accuracy", val_acc, "#2a8f3a");
  add(acc, "validation mean AP", pick(h, {"val_mean_ap"}), "#7a3fbf");
  charts.push_back(acc);
  Chart wall = chart("chart-wall", "Loss and accuracy against wall time", h.wall_label(), h);
  add(wall, "train loss", by_hours(h, train_fine.empty() ? train_epoch : train_fine), "#1f5fbf");
  add(wall, "validation loss", by_hours(h, val_loss), "#d0431f");
  add(wall, "validation accuracy", by_hours(h, val_acc), "#2a8f3a");
  charts.push_back(wall);
}

// The learning rate, images/s and the loss scale at the training curve's points (per epoch in a
// run without one), and a time budget's plan against the steps done.
void training_charts(const History& h, std::vector<Chart>& charts) {
  Chart lr = chart("chart-lr", "Learning rate", "step", h);
  add(lr, "learning rate", fine_or(h, "train/lr", {"lr"}), "#7a3fbf");
  charts.push_back(lr);
  Chart speed = chart("chart-speed", "Images per second", "step", h);
  add(speed, "images/s", fine_or(h, "train/images_per_s", {"images_per_s"}), "#1f5fbf");
  charts.push_back(speed);
  Chart scale = chart("chart-loss-scale", "Loss scale (fp16)", "step", h);
  add(scale, "loss scale", fine(h, "train/loss_scale"), "#b07a00");
  charts.push_back(scale);
  Chart plan = chart("chart-plan", "Time budget: planned steps against steps done", h.wall_label(), h);
  Points done;
  for (const auto& [step, wall] : h.wall) done.emplace_back(step, step);
  add(plan, "planned steps (budget/planned_steps)", by_hours(h, fine(h, "budget/planned_steps")), "#b07a00", true);
  if (!plan.series.empty()) add(plan, "steps done", by_hours(h, done), "#1f5fbf");
  charts.push_back(plan);
}

}  // namespace

std::string curves_section(const nlohmann::json& doc) {
  const History h = history_of(doc);
  std::vector<Chart> charts;
  learning_charts(h, charts);
  training_charts(h, charts);
  std::string out = "<section id=\"curves\"><h2>Training curves</h2><div class=\"charts\">";
  std::string missing;
  for (const Chart& c : charts) {
    const std::string svg = line_chart(c);
    out += svg;
    if (svg.empty()) missing += (missing.empty() ? "" : "; ") + escape_html(c.title);
  }
  out += "</div>";
  if (!missing.empty()) out += "<p class=\"note\">Not recorded by this run: " + missing + ".</p>";
  if (!h.metrics.count("train_accuracy"))
    out +=
        "<p class=\"note\" id=\"no-train-accuracy\">Training accuracy is not recorded by this run: a multi-label "
        "run's tags have no top-1, nor has an image mixed by mixup or cutmix, and runs of frugal before it was "
        "counted kept the training loss only.</p>";
  return out + "</section>";
}

std::string sessions_table(const nlohmann::json& doc) {
  const auto sessions = doc.find("sessions");
  if (sessions == doc.end() || !sessions->is_array() || sessions->empty()) return "";
  const History h = history_of(doc);
  std::string out =
      "<h3>Sessions</h3><table id=\"sessions\"><tr><th>#</th><th>began</th><th>last record</th>"
      "<th>hours</th><th>steps</th><th>ended</th><th>events file</th></tr>";
  for (std::size_t i = 0; i < sessions->size(); ++i) {
    const auto& s = (*sessions)[i];
    if (!s.is_object()) continue;
    const double a = number_of(s.value("start", nlohmann::json())), b = number_of(s.value("end", nlohmann::json()));
    out += "<tr><td>" + std::to_string(i + 1) + "</td><td>" + utc_time(a) + "</td><td>" + utc_time(b) + "</td><td>" +
           number((b - a) / 3600, 3) + "</td><td>" + json_cell(s.value("first_step", nlohmann::json())) + " to " +
           json_cell(s.value("last_step", nlohmann::json())) + "</td><td class=\"ended\">" +
           escape_html(i < h.endings.size() ? h.endings[i] : "-") + "</td><td>" +
           json_cell(s.value("file", nlohmann::json())) + "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace frugal::report
