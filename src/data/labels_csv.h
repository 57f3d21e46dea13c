// labels.csv inside a training archive: `path,label` lines, an optional `path,label` header row.
// Torch-free on purpose: the fuzz target (fuzz/labels.cmake) compiles labels_csv.cpp on its own,
// since the data library it belongs to is built only with LibTorch.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace frugal::detail {

// path (normalised as normalize_relative does, so "./d/f.jpg" names "d/f.jpg") -> label.
// The label is what follows the last comma, so paths may hold commas; either field may be quoted
// whole ("..."). Throws Error(invalid) naming "<where>:<line>" for a line without a comma, a path
// that cannot name an entry (empty, absolute, "..", NUL) or one path given two different labels.
std::map<std::string, std::string> parse_labels_csv(std::string_view text, const std::string& where);

}  // namespace frugal::detail
