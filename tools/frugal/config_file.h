// `frugal train --config FILE.toml`: the file's keys are the long options ("batch-size" or
// "batch_size"); they become arguments placed before the command line's, so the command line wins.
// Torch-free (unlike torch_cmd_train.cpp, which uses it) so that fuzz/config.cmake can build it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace frugal::cli {

// The arguments a TOML document stands for: `key = value` -> "--key=value" (one per element of an
// array); for the long options in `flags`, which take no value, `true` -> "--key" and `false` ->
// nothing. Throws Error(invalid) naming `where` (and the line) for TOML that does not parse, keys
// that are not option names, values that are not strings, numbers, booleans or arrays of them,
// strings holding a NUL byte, and a boolean for an option that takes a value (a bare "--workers"
// would take the next argument as its value).
std::vector<std::string> config_args_from_toml(std::string_view text, const std::string& where,
                                               const std::vector<std::string>& flags);

// config_args_from_toml over the file: Error(usage) when it cannot be read, Error(invalid) when it
// is larger than 1 MiB (no configuration is; the read stops there). Paths in it (data, run, val,
// init, workspace) are the user's own, like those typed on the command line, and are taken as
// given; nothing in it comes from the data being trained on.
std::vector<std::string> config_args(const std::string& file, const std::vector<std::string>& flags);

}  // namespace frugal::cli
