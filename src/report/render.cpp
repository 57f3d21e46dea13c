// The report page: head (no script; a Content-Security-Policy that allows no request), summary,
// sections, the run's facts.
#include <cmath>

#include "frugal/report/report.h"
#include "frugal/util/units.h"
#include "report/page.h"
#include "report/sections.h"

namespace frugal::report {
namespace {

const nlohmann::json kNone;

const nlohmann::json& at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return kNone;
  const auto it = j.find(key);
  return it == j.end() ? kNone : *it;
}

std::string bytes_text(const nlohmann::json& v) {
  if (!v.is_number_unsigned() && !v.is_number_integer()) return "-";
  return format_size(v.get<std::uint64_t>());
}

std::string row(const std::string& key, const std::string& html) {
  return "<tr><th>" + escape_html(key) + "</th><td>" + html + "</td></tr>";
}

constexpr const char* kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}"
    "h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;"
    "vertical-align:top}th{background:#f4f4f4}.charts,.matrices,.thumbs{display:flex;flex-wrap:wrap;gap:12px}"
    "figure{margin:0}figcaption{font-weight:600}svg{font-size:10px;overflow:visible}.legend span{margin-right:1em}"
    ".legend i{display:inline-block;width:12px;height:3px;margin-right:4px;vertical-align:middle}"
    "figure.worst{width:150px;font-size:12px}figure.worst figcaption{font-weight:normal;word-break:break-all}"
    "img.thumb{width:128px;height:128px;object-fit:contain;image-rendering:pixelated;background:#eee}"
    ".nothumb{width:128px;height:128px;background:#eee}.note{color:#666}.matrix text.n{font-size:8px}";

std::string head(const nlohmann::json& doc) {
  const std::string run = at(doc, "run").is_string() ? at(doc, "run").get<std::string>() : "";
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
         "style-src 'unsafe-inline'\"><meta name=\"generator\" content=\"frugal report\"><title>frugal report: " +
         escape_html(run) + "</title><style>" + kStyle + "</style></head><body>";
}

std::string summary(const nlohmann::json& doc) {
  const nlohmann::json& eval = at(doc, "eval");
  const nlohmann::json& cfg = at(doc, "config");
  std::string out = "<h1>frugal report: " + json_cell(at(doc, "run")) + "</h1><p id=\"summary\">";
  if (eval.is_object() && at(eval, "multi_label") == true)
    out += "Best checkpoint: mean AP <b>" + percent(number_of(at(eval, "mean_ap"))) + "</b>, F1 " +
           percent(number_of(at(eval, "f1"))) + ", loss " + number(number_of(at(eval, "loss"))) + " on " +
           json_cell(at(eval, "samples")) + " images of " + json_cell(at(eval, "data")) + ". ";
  else if (eval.is_object())
    out += "Best checkpoint: accuracy <b>" + percent(number_of(at(eval, "accuracy"))) + "</b>, loss " +
           number(number_of(at(eval, "loss"))) + " on " + json_cell(at(eval, "samples")) + " images of " +
           json_cell(at(eval, "data")) + ". ";
  if (cfg.is_object())
    out += "Model " + json_cell(at(cfg, "model")) + ", " + std::to_string(at(cfg, "classes").size()) + " classes. ";
  out += "Written " + json_cell(at(doc, "generated")) + ".</p><nav>";
  for (const auto& [id, name] : {std::pair{"curves", "Curves"},
                                 {"confusion", "Confusion matrix"},
                                 {at(eval, "multi_label") == true ? "per-tag" : "per-class", "Per class"},
                                 {"worst", "Worst predictions"},
                                 {"facts", "Facts"}})
    out += "<a href=\"#" + std::string(id) + "\">" + name + "</a> ";
  return out + "</nav>";
}

// {reason: count} as "reason: n, ...", "none" when empty.
std::string skip_counts(const nlohmann::json& skipped) {
  std::string out;
  if (skipped.is_object())
    for (const auto& [reason, n] : skipped.items())
      out += (out.empty() ? "" : ", ") + escape_html(reason) + ": " + json_cell(n);
  return out.empty() ? "none" : out;
}

// The training data's skips: the last epoch record's "train_skipped" (found opening the data, and
// undecodable since), or config.json's "data" "skipped".
std::string train_skipped(const nlohmann::json& doc) {
  const nlohmann::json* found = nullptr;
  for (const auto& line : at(doc, "metrics"))
    if (at(line, "train_skipped").is_object()) found = &at(line, "train_skipped");
  if (!found && at(at(doc, "config"), "data").is_object() && at(at(at(doc, "config"), "data"), "skipped").is_object())
    found = &at(at(at(doc, "config"), "data"), "skipped");
  return found ? skip_counts(*found) : "not recorded by this run";
}

std::string data_facts(const nlohmann::json& doc) {
  const nlohmann::json& cfg = at(doc, "config");
  const nlohmann::json& eval = at(doc, "eval");
  std::string t = "<h3>Data</h3><table id=\"data-facts\">";
  if (at(cfg, "data").is_object())
    for (const auto& [k, v] : at(cfg, "data").items()) t += row("training: " + k, json_cell(v));
  t += row("training images", json_cell(at(cfg, "train_images")));
  t += row("classes", json_cell(static_cast<std::uint64_t>(at(cfg, "classes").size())));
  t += row("evaluated on", json_cell(at(eval, "data")) + " (" + json_cell(at(eval, "samples")) + " images)");
  t += row("training files left out", train_skipped(doc));
  t += row("files left out of the evaluation", skip_counts(at(eval, "skipped")));
  return t + "</table>";
}

std::string checkpoint_facts(const nlohmann::json& doc) {
  std::string t =
      "<h3>Checkpoints kept</h3><table id=\"checkpoints\"><tr><th>file</th><th>epoch</th><th>step</th>"
      "<th>size</th><th>metric</th></tr>";
  for (const auto& c : at(doc, "checkpoints"))
    t += "<tr><td>" + json_cell(at(c, "name")) + "</td><td>" + json_cell(at(c, "epoch")) + "</td><td>" +
         json_cell(at(c, "step")) + "</td><td>" + bytes_text(at(c, "bytes")) + "</td><td>" +
         json_cell(at(c, "metric")) + "</td></tr>";
  const nlohmann::json& disk = at(doc, "disk");
  t += "</table><p id=\"disk\">Disk use of the run folder: " + bytes_text(at(disk, "used")) + " of a budget of " +
       (at(disk, "budget").is_null() ? std::string("none set") : bytes_text(at(disk, "budget"))) + ".</p>";
  return t;
}

std::string environment_facts(const nlohmann::json& env) {
  if (!env.is_object()) return "";
  std::string gpus;
  for (const auto& g : at(env, "gpus"))
    gpus += (gpus.empty() ? "" : "; ") + json_cell(at(g, "name")) + " (" + bytes_text(at(g, "memory")) + ")";
  std::string warnings;
  for (const auto& w : at(env, "warnings")) warnings += "<li>" + json_cell(w) + "</li>";
  return "<h3>Environment (frugal doctor)</h3><table id=\"environment\">" +
         row("frugal", json_cell(at(env, "frugal_version"))) +
         row("CPU", json_cell(at(at(env, "cpu"), "model")) + ", " + json_cell(at(at(env, "cpu"), "cores")) + " cores") +
         row("RAM", bytes_text(at(at(env, "ram"), "total"))) +
         row("LibTorch", json_cell(at(at(env, "libtorch"), "version")) + " (CUDA runtime " +
                             json_cell(at(at(env, "libtorch"), "cuda_runtime")) + ")") +
         row("driver", json_cell(at(at(env, "driver"), "version"))) + row("GPUs", gpus.empty() ? "none" : gpus) +
         "</table>" + (warnings.empty() ? "" : "<ul class=\"note\">" + warnings + "</ul>");
}

}  // namespace

std::string facts_section(const nlohmann::json& doc) {
  std::string options = "<h3>Options (config.json)</h3><table id=\"options\">";
  const nlohmann::json& cfg = at(doc, "config");
  if (cfg.is_object())
    for (const auto& [k, v] : cfg.items())
      if (k != "classes" && k != "data" && k != "format") options += row(k, json_cell(v));
  return "<section id=\"facts\"><h2>Facts</h2>" + data_facts(doc) + sessions_table(doc) + checkpoint_facts(doc) +
         options + "</table>" + environment_facts(at(doc, "environment")) + "</section>";
}

std::string render_report(const nlohmann::json& doc) {
  return head(doc) + summary(doc) + curves_section(doc) + evaluation_sections(at(doc, "eval")) + facts_section(doc) +
         "</body></html>\n";
}

}  // namespace frugal::report
