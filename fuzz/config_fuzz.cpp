// libFuzzer target for `frugal train --config FILE.toml`: any input must become "--option[=value]"
// arguments, or fail with frugal::Error; never crash or let toml++'s or another exception escape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config_file.h"
#include "frugal/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    static const std::vector<std::string> flags = {"fresh", "json", "delta", "deterministic"};
    auto args = frugal::cli::config_args_from_toml(std::string_view(reinterpret_cast<const char*>(data), size),
                                                   "fuzz.toml", flags);
    for (const auto& a : args)
      if (a.size() < 3 || a.compare(0, 2, "--") != 0 || a.find('\0') != std::string::npos) __builtin_trap();
  } catch (const frugal::Error&) {}
  return 0;
}
