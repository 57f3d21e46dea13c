// Small text rules shared by the readers of users' files (layouts, labels, WebDataset metadata).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace frugal {

// The non-empty parts of an entry name split at '/': "a//b/c/" -> {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& name);

// `s` without leading and trailing ASCII whitespace.
std::string_view trim(std::string_view s);

// The deepest nesting of '[' and '{' in a JSON text, strings skipped: readers parse a user's JSON
// only when it is as shallow as what they expect (a value nested 60,000 deep is a few bytes a
// level, and would be a deep structure to build and free).
std::size_t json_nesting(std::string_view s);

}  // namespace frugal
