// libFuzzer target for a checkpoint's "time_budget" metadata (JSON read from the checkpoint's
// safetensors header). Each input either fails with frugal::Error or resumes a plan whose schedule
// is in range, and the steps a run takes after it (as Session's loop: a step, the plan's update,
// the end once the steps done reach the plan's total) give learning rates in [0, base] and totals
// never below the steps done.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "frugal/util/error.h"
#include "frugal/budget/time_budget.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    frugal::TimeBudget tb({3600, 100});
    tb.resume(j);
    const frugal::Schedule& s = tb.schedule();
    if (s.anchor_step < 0 || s.total_steps < s.anchor_step || !(s.anchor_progress >= 0 && s.anchor_progress <= 1))
      __builtin_trap();
    const std::int64_t from = s.anchor_step;
    for (std::int64_t k = 0; k < 8; ++k) {
      tb.record_step(0.5);
      tb.update(from + k, 10.0 + static_cast<double>(k), k == 7);
      if (tb.total_steps() < from + k && tb.planned()) __builtin_trap();
      // The run ends here (Session::run_epoch); one spent past its budget is planned to end at the
      // steps it has done.
      if (from + k >= tb.total_steps()) break;
      const double lr = tb.lr(1.0, from + k, 0.02);
      if (!(lr >= 0 && lr <= 1.0 + 1e-12)) __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  return 0;
}
