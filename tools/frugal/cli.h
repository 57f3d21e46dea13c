// Shared plumbing for the sub-commands: parsing with CLI11, --json output, option validators.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace frugal::cli {

// Parses argv (argv[0] is the command name). Returns -1 to go on, else the exit code to return
// (0 after --help, 2 after a usage error, with the message and a pointer to --help).
int parse(CLI::App& app, int argc, char** argv);

// An error message for the user of `command`: an option named in it that this command does not
// take (library advice such as "raise --max-bad-fraction", written for train, reaching eval) is
// said as a setting this command lacks instead of an option to type. A clause quoting a whole
// "frugal CMD ..." line is left alone. Before parse() has seen the command's options: unchanged.
std::string fit_advice(const std::string& what, const std::string& command);

// Prints one JSON document on stdout (terminal.h's json_text: names that are not UTF-8 do not
// break it).
void print_json(const nlohmann::json& doc);

// A command's result (the ls table, the verify report, the eval table, predict's rows) goes to
// stdout whether or not it is a terminal, so `frugal ls x.zip | head` works; notes, warnings and
// progress go to stderr (CLI.md). Names from data in it go through printable() (terminal.h).

// Validators whose messages read "--top: expected an integer >= 1, found 0" (CLI11 adds the
// option's name; its own print ranges as "0.000000 to 1797693…", 300 digits). Each refuses text
// that is not a number of the kind, so CLI11's conversion never sees it.
CLI::Validator at_least(long long min);                  // an integer >= min
CLI::Validator integer_in(long long lo, long long hi);   // an integer in [lo, hi]
CLI::Validator number_at_least(double min, bool exclusive = false);  // a number >= min (> min)
CLI::Validator number_in(double lo, double hi);          // a number in [lo, hi]
CLI::Validator one_of(std::vector<std::string> choices); // "expected one of cpu, gpu, auto, found x"
CLI::Validator valid_size();      // what parse_size takes: 512K, 1000M, 1.5G, 5GiB, 5GB
CLI::Validator valid_duration();  // what parse_duration takes: 90s, 30m, 7h30m

}  // namespace frugal::cli
