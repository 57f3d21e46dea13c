// Shared plumbing for the sub-commands: parsing with CLI11, --json output, size/duration options.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace frugal::cli {

// Parses argv (argv[0] is the command name). Returns -1 to go on, else the exit code to return
// (0 after --help, 2 after a usage error, with CLI11's message and a pointer to --help).
int parse(CLI::App& app, int argc, char** argv);

// Prints one JSON document on stdout.
void print_json(const nlohmann::json& doc);

// True when stdout is a terminal (human output may go there), else human output goes to stderr.
bool stdout_is_tty();

}  // namespace frugal::cli
