// libFuzzer target for frugal report: the input read as a TensorBoard events file (read_events)
// and as metrics.jsonl's lines, and as one JSON document; the page rendered over each. Whatever a
// run folder holds, nothing may throw (render_report promises a page for a document of any
// shape), and no input may put a script, or an unescaped tag of its own, into the page.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "frugal/report/report.h"

namespace {

// The page holds no <script> element: every text of the record reaches it escaped.
void check_page(const std::string& page) {
  if (page.find("<script") != std::string::npos || page.find("<SCRIPT") != std::string::npos) __builtin_trap();
}

// metrics.jsonl as read_run_history reads it: a line that is not a JSON object is skipped.
nlohmann::json metrics_lines(std::string_view text) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  nlohmann::json session = frugal::report::read_events(in);
  if (!session.is_object() || !session.contains("scalars")) __builtin_trap();
  for (const auto& [tag, points] : session["scalars"].items())
    for (const auto& p : points)
      if (!p.is_array() || p.size() != 3) __builtin_trap();
  session["file"] = "events.out.tfevents.1.host.frugal";
  nlohmann::json doc = {{"config", {{"model", "cnn"}, {"epochs", 2}}},
                        {"metrics", metrics_lines(in)},
                        {"sessions", nlohmann::json::array({session})}};
  check_page(frugal::report::render_report(doc));
  const auto whole = nlohmann::json::parse(in, nullptr, false);
  if (!whole.is_discarded()) check_page(frugal::report::render_report(whole));
  return 0;
}
