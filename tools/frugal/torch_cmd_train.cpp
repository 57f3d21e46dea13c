// frugal train --data ARCHIVE --run DIR [options]   (CLI.md, "frugal train options")
// The options come from the library's one table (train_options(), train.h): each value is parsed
// and validated into the typed TrainConfig here, at the edge; a refused value is exit 2 naming the
// option, the value and what is allowed, before anything is read or written.
#include <string>
#include <algorithm>
#include <utility>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "config_file.h"
#include "frugal/error.h"
#include "frugal/progress.h"
#include "frugal/train.h"

namespace frugal::cli {
namespace {

std::string option_name(const TrainOption& row) {
  std::string name = row.name ? row.name : row.key;
  for (auto& ch : name)
    if (ch == '_') ch = '-';
  return "--" + name;
}

// CLI11 only collects the text; the table's parsers run after it, in command-line order (the
// last of a repeated option wins, as CLI11's TakeLast would have it).
void add_options(CLI::App& app, std::vector<std::pair<const TrainOption*, std::string>>& given) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (const TrainOption& row : train_options()) {
    const std::string name = option_name(row);
    CLI::Option* opt = nullptr;
    switch (row.kind) {
      case TrainOption::Kind::flag:
        opt = app.add_flag_function(
            name, [&given, r = &row](std::int64_t n) { given.emplace_back(r, n > 0 ? "true" : "false"); }, row.help);
        break;
      case TrainOption::Kind::values:
        opt = app.add_option_function<std::vector<std::string>>(
            name,
            [&given, r = &row](const std::vector<std::string>& values) {
              for (const auto& v : values) given.emplace_back(r, v);
            },
            row.help);
        opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        break;
      case TrainOption::Kind::value:
        opt = app.add_option_function<std::string>(
            name, [&given, r = &row](const std::string& v) { given.emplace_back(r, v); }, row.help);
        break;
    }
    if (row.required) opt->required();
  }
}

}  // namespace

int cmd_train(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // "--config=FILE" too: CLI11 would otherwise take it and the file would be silently unread.
    if ((a == "--config" && i + 1 < argc) || a.rfind("--config=", 0) == 0) {
      auto extra = config_args(a == "--config" ? argv[i + 1] : a.substr(9));
      args.insert(args.begin() + 1, extra.begin(), extra.end());
      break;
    }
  }
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());

  CLI::App app("Train a model straight from an archive; resumable, within time and disk budgets.", "train");
  std::vector<std::pair<const TrainOption*, std::string>> given;
  add_options(app, given);
  if (int rc = parse(app, static_cast<int>(ptrs.size()), ptrs.data()); rc >= 0) return rc;

  TrainConfig config;
  config.decode = DecodeChoice::automatic;  // the command's default; the library's is cpu
  for (const auto& [row, text] : given)
    if (std::string allowed = row->set(config, text); !allowed.empty())
      fail(ErrorKind::usage, option_name(*row), allowed, "\"" + text + "\"", "see frugal train --help");
  // --time-budget plans the epochs: --epochs left out means --epochs auto; a number contradicts it.
  auto given_key = [&given](const char* key) {
    return std::any_of(given.begin(), given.end(), [key](const auto& g) { return std::string(g.first->key) == key; });
  };
  if (config.time_budget && !given_key("epochs")) config.epochs = 0;
  if (config.time_budget && config.epochs != 0)
    fail(ErrorKind::usage, "--time-budget with --epochs " + std::to_string(config.epochs),
         "--epochs auto (or no --epochs): the budget decides how many epochs", "a fixed number of epochs",
         "leave --epochs out to train for the budget, or leave --time-budget out (--deadline cuts a session)");
  if (config.epochs == 0 && !config.time_budget)
    fail(ErrorKind::usage, "--epochs auto", "--time-budget DURATION to plan the epochs for", "no --time-budget",
         "add --time-budget (e.g. 20h: the whole run, all sessions together), or give a number of epochs");

  Progress::set_quiet(config.json);
  const SessionOutcome out = train_session(config);
  const int rc = out.status == SessionOutcome::Status::done ? 0 : exit_code(ErrorKind::interrupted);
  if (config.json) print_json({{"run", config.run}, {"exit_code", rc}});
  return rc;
}

}  // namespace frugal::cli
