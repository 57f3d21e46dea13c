// Sizes and durations as users write them on the command line (CLI.md, "Conventions").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace frugal {

// "512K", "1000M", "1.5G", "5GiB" (powers of 1024), "5GB" (powers of 1000), "123" (bytes).
// Throws Error(usage) naming the text and the accepted forms.
std::uint64_t parse_size(std::string_view text);

// "90s", "30m", "7h30m", "8h", "1h2m3s", "45" (seconds).
std::chrono::seconds parse_duration(std::string_view text);

// 1536 -> "1.5 KiB"; exact bytes below 1 KiB.
std::string format_size(std::uint64_t bytes);

// count_of(1, "step") -> "1 step", count_of(3, "class") -> "3 classes", count_of(2, "entry") ->
// "2 entries"; give `plural` where English is irregular.
std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural = {});

// 0.8638 -> "86.38%"; 1 -> "100%"; trailing zeros dropped ("50%", "12.5%").
std::string format_percent(double fraction, int decimals = 2);

// 5400 -> "1h30m"; 59 -> "59s".
std::string format_duration(std::chrono::seconds d);

}  // namespace frugal
