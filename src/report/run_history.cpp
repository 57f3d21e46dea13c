// What a run folder records of its training, for the report: config.json, metrics.jsonl, the
// TensorBoard events files (one per session), the checkpoints and the folder's disk use.
#include <algorithm>
#include <cstring>

#include "frugal/budget/budget.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/report/report.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/units.h"

namespace frugal::report {
namespace {

// A protobuf reader over one message's bytes: fields in order, unknown ones skipped.
struct Fields {
  std::string_view b;
  std::size_t pos = 0;
  bool ok = true;

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && pos < b.size(); shift += 7) {
      const auto c = static_cast<unsigned char>(b[pos++]);
      v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  std::uint64_t fixed(std::size_t n) {
    if (b.size() - pos < n) {
      ok = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[pos + i])) << (8 * i);
    pos += n;
    return v;
  }
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (!ok || n > b.size() - pos) {
      ok = false;
      return {};
    }
    pos += n;
    return b.substr(pos - n, n);
  }
  // The next field: its number and wire type; false at the end or on damage.
  bool next(std::uint32_t& field, std::uint32_t& type) {
    if (!ok || pos >= b.size()) return false;
    const std::uint64_t tag = varint();
    field = static_cast<std::uint32_t>(tag >> 3);
    type = static_cast<std::uint32_t>(tag & 7);
    return ok;
  }
  void skip(std::uint32_t type) {
    if (type == 0)
      varint();
    else if (type == 1)
      fixed(8);
    else if (type == 2)
      bytes();
    else if (type == 5)
      fixed(4);
    else
      ok = false;
  }
};

double as_double(std::uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
float as_float(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Summary.value's (tag, simple_value) pairs.
void read_summary(std::string_view summary, double step, double wall, nlohmann::json& scalars) {
  Fields s{summary};
  std::uint32_t field = 0, type = 0;
  while (s.next(field, type)) {
    if (field != 1 || type != 2) {
      s.skip(type);
      continue;
    }
    Fields v{s.bytes()};
    std::string tag;
    double value = NAN;
    bool has_value = false;
    std::uint32_t vf = 0, vt = 0;
    while (v.next(vf, vt)) {
      if (vf == 1 && vt == 2)
        tag = std::string(v.bytes());
      else if (vf == 2 && vt == 5)
        value = as_float(static_cast<std::uint32_t>(v.fixed(4))), has_value = true;
      else
        v.skip(vt);
    }
    if (v.ok && has_value && !tag.empty()) scalars[tag].push_back({step, wall, value});
  }
}

}  // namespace

nlohmann::json read_events(std::string_view bytes) {
  nlohmann::json out = {{"scalars", nlohmann::json::object()}};
  std::size_t pos = 0;
  while (bytes.size() - pos >= 12) {
    Fields header{bytes.substr(pos, 12)};
    const std::uint64_t n = header.fixed(8);
    if (n > bytes.size() - pos - 12 || bytes.size() - pos - 12 - n < 4) break;  // a truncated record ends the file
    Fields ev{bytes.substr(pos + 12, n)};
    pos += 12 + n + 4;
    double wall = NAN, step = 0;
    std::string_view summary;
    std::uint32_t field = 0, type = 0;
    while (ev.next(field, type)) {
      if (field == 1 && type == 1)
        wall = as_double(ev.fixed(8));
      else if (field == 2 && type == 0)
        step = static_cast<double>(static_cast<std::int64_t>(ev.varint()));
      else if (field == 5 && type == 2)
        summary = ev.bytes();
      else
        ev.skip(type);
    }
    if (!ev.ok) continue;
    if (!std::isnan(wall)) {
      if (!out.contains("start")) out["start"] = wall;
      out["end"] = wall;
    }
    if (summary.empty()) continue;
    if (!out.contains("first_step")) out["first_step"] = step;
    out["last_step"] = step;
    read_summary(summary, step, wall, out["scalars"]);
  }
  return out;
}

nlohmann::json read_metrics_lines(std::string_view text) {
  nlohmann::json lines = nlohmann::json::array();
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto line = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    if (line.is_object()) lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

namespace {

nlohmann::json read_metrics(const std::filesystem::path& file) {
  const auto text = read_regular_at_most(file, 256ull << 20);
  return text ? read_metrics_lines(*text) : nlohmann::json::array();
}

// The events files, oldest first (their names begin with the session's start in seconds).
nlohmann::json read_sessions(const std::filesystem::path& run) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(run)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("events.out.tfevents.", 0) == 0 && e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  nlohmann::json sessions = nlohmann::json::array();
  for (const auto& f : files) {
    const auto bytes = read_regular_at_most(f, 256ull << 20);
    if (!bytes) continue;
    nlohmann::json s = read_events(*bytes);
    s["file"] = f.filename().string();
    sessions.push_back(std::move(s));
  }
  std::stable_sort(sessions.begin(), sessions.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("start", 0.0) < b.value("start", 0.0);
  });
  return sessions;
}

nlohmann::json read_checkpoints(const std::filesystem::path& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const CheckpointEntry& c : list_checkpoints(run, false)) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(c.path, ec);
    out.push_back({{"name", c.path.filename().string()},
                   {"epoch", c.name.epoch},
                   {"step", c.name.step},
                   {"bytes", ec ? 0 : bytes},
                   {"valid", c.valid},
                   {"metric", c.metric ? nlohmann::json(*c.metric) : nlohmann::json()}});
  }
  return out;
}

}  // namespace

nlohmann::json read_run_history(const std::filesystem::path& run) {
  const std::optional<nlohmann::json> config = read_run_config(run);
  if (!config || config->value("format", "") != "frugal-run-config")
    fail(ErrorKind::invalid, (run / kConfigFile).string(),
         "a frugal run folder's config.json (\"format\": \"frugal-run-config\")",
         config ? "another program's config.json" : "no config.json", "give a run folder that frugal train wrote");
  nlohmann::json doc = {{"run", run.string()}, {"config", *config}};
  doc["metrics"] = read_metrics(run / kMetricsFile);
  doc["sessions"] = read_sessions(run);
  doc["checkpoints"] = read_checkpoints(run);
  std::uint64_t used = 0;
  for (const auto& e : std::filesystem::directory_iterator(run))
    if (e.is_regular_file() && !e.is_symlink()) used += allocated_size(e.path());
  doc["disk"] = {{"used", used}, {"budget", nullptr}};
  const auto budget = config->find("disk_budget");
  if (budget != config->end() && budget->is_string() && !budget->get<std::string>().empty()) {
    try {
      doc["disk"]["budget"] = parse_size(budget->get<std::string>());
    } catch (const Error&) {  // shown as none: the report is not where a bad budget is judged
    }
  } else if (budget != config->end() && budget->is_number_unsigned()) {
    doc["disk"]["budget"] = *budget;
  }
  return doc;
}

}  // namespace frugal::report
