// frugal train --data ARCHIVE --run DIR [options]   (CLI.md, "frugal train options")
// The options come from the library's one table (train_options(), training/train_config.h): each value is parsed
// and validated into the typed TrainConfig here, at the edge; a refused value is exit 2 naming the
// option, the value and what is allowed, before anything is read or written.
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "config_file.h"
#include "frugal/budget/budget.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/train/launch.h"
#include "frugal/train/train_session.h"
#include "frugal/training/train_config.h"

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

// What each rank of a --nproc run reads: this command's arguments (after its name) less --nproc
// and --config.
std::vector<std::string> rank_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--nproc" || args[i] == "--config") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc=", 0) == 0 || args[i].rfind("--config=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

// The long options that take no value (--fresh, --json, ...), without their "--": in a config
// file only they may be given true or false.
std::vector<std::string> flag_names() {
  std::vector<std::string> names;
  for (const TrainOption& row : train_options())
    if (row.kind == TrainOption::Kind::flag) names.push_back(option_name(row).substr(2));
  return names;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // "--config=FILE" too: CLI11 would otherwise take it and the file would be silently unread.
    if ((a == "--config" && i + 1 < argc) || a.rfind("--config=", 0) == 0) {
      auto extra = config_args(a == "--config" ? argv[i + 1] : a.substr(9), flag_names());
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
  for (const auto& [row, text] : given) {
    if (std::string allowed = row->set(config, text); !allowed.empty())
      fail(ErrorKind::usage, option_name(*row), allowed, "\"" + text + "\"", "see frugal train --help");
    config.given.emplace_back(row->key);  // a recipe leaves it as given (training/recipe.h)
  }
  validate(config);  // the rules between options, as the library applies them

  // The ranks get the options as this command read them, the config file's included, less --nproc
  // and --config: a rank that read nproc again would try to launch ranks of its own.
  if (config.nproc > 1) return run_torchrun(config.nproc, rank_args(args));
  Progress::set_quiet(config.json);
  // A rank of a torchrun run: the launcher's signal to ranks still closing must not change their
  // exit code (SignalGuard::ignore_after_session).
  const LaunchedAs launched = launched_as();
  if (launched.torchrun_rank) SignalGuard::ignore_after_session();
  // --json: one document on stdout however the run ends; a failure's is its exit code and message
  // (printed on stderr as well, by the command's error handler).
  auto failed = [&](int rc, const std::string& what) {
    record_rank0_exit(rc);
    if (config.json && launched.rank0)
      print_json({{"exit_code", rc}, {"run", config.run}, {"status", "failed"}, {"error", fit_advice(what, "train")}});
  };
  SessionOutcome out;
  try {
    out = train_session(config);
  } catch (const Error& e) {
    failed(exit_code(e.kind()), e.what());
    throw;
  } catch (const std::exception& e) {
    failed(1, e.what());
    throw;
  } catch (...) {
    failed(1, "internal error");
    throw;
  }
  const int rc = out.status == SessionOutcome::Status::done ? 0 : exit_code(ErrorKind::interrupted);
  record_rank0_exit(rc);
  if (config.json && launched.rank0) print_json(outcome_json(out, rc, config.run));
  return rc;
}

}  // namespace frugal::cli
