#include "cli.h"

#include <unistd.h>

#include <iostream>

namespace frugal::cli {

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "frugal " << app.get_name() << ": " << e.what() << "\n"
              << "Run 'frugal " << app.get_name() << " --help' for the options.\n";
    return 2;
  }
  return -1;
}

void print_json(const nlohmann::json& doc) { std::cout << doc.dump(2) << std::endl; }

bool stdout_is_tty() { return ::isatty(1) == 1; }

}  // namespace frugal::cli
