// What an interrupted extract, split or pack leaves behind: temporaries (fs.h's
// "<name>.frugal-tmp-<12 hex>") that look like complete files, under names a later `pack` or
// training would take for data. Each of these commands removes, when it starts, the ones it
// provably may: abandoned (their writer's lock can be taken: fs.h's remove_if_abandoned) and made
// for a name it is about to write itself.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace frugal {

// Whether `temp_name` is a name temp_path_for() makes for `target_name` (whose end may have been
// cut to fit NAME_MAX).
bool is_temp_for(std::string_view temp_name, std::string_view target_name);

// For a temporary's file name: calls `ours(prefix, cut)` with the part before the marker, cut
// telling whether temp_path_for shortened it; false for other names.
bool temp_prefix_matches(std::string_view temp_name, const std::function<bool(std::string_view, bool)>& ours);

// Removes the abandoned temporaries directly in `dir` whose file name `ours` accepts; returns how
// many. A temporary whose writer is alive is never touched; nothing outside `dir` is looked at.
std::size_t remove_abandoned_temporaries(const std::filesystem::path& dir,
                                         const std::function<bool(const std::string&)>& ours);

}  // namespace frugal
