// libFuzzer target for frugal report: the input read as a TensorBoard events file (read_events),
// as metrics.jsonl's lines (read_metrics_lines) and as one JSON document; the page rendered over
// each. Whatever a run folder holds, nothing may throw (render_report promises a page for a
// document of any shape), and no input may put a script, or an unescaped tag of its own, into the
// page.
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
                        {"metrics", frugal::report::read_metrics_lines(in)},
                        {"sessions", nlohmann::json::array({session})}};
  check_page(frugal::report::render_report(doc));
  const auto whole = nlohmann::json::parse(in, nullptr, false);
  if (!whole.is_discarded()) check_page(frugal::report::render_report(whole));
  return 0;
}
