// The global batch a run's config records (internal; torch-free, so that its fuzz target builds
// without LibTorch).
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace frugal {

// batch_size x accum x world_size of a config.json or a checkpoint's "config" metadata (accum and
// world_size absent: 1; batch_size absent: 0). nullopt when one is not an integer or the product
// overflows: a checkpoint may hold anything there, which reads as unreadable, never as a wrap or
// an exception.
std::optional<std::int64_t> global_batch_of(const nlohmann::json& config);

}  // namespace frugal
