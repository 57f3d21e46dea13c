#include "frugal/training/global_batch.h"

namespace frugal {

std::optional<std::int64_t> global_batch_of(const nlohmann::json& c) {
  auto number = [&](const char* key, std::int64_t absent) -> std::optional<std::int64_t> {
    if (!c.is_object() || !c.contains(key)) return absent;
    const auto& v = c[key];
    // An unsigned above INT64_MAX would wrap to a negative number in get<int64_t>().
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) return std::nullopt;
    return v.get<std::int64_t>();
  };
  auto b = number("batch_size", 0), k = number("accum", 1), w = number("world_size", 1);
  std::int64_t bk = 0, product = 0;
  if (!b || !k || !w || __builtin_mul_overflow(*b, *k, &bk) || __builtin_mul_overflow(bk, *w, &product))
    return std::nullopt;
  return product;
}

}  // namespace frugal
