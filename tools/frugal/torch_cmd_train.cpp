// frugal train --data ARCHIVE --run DIR [options]   (CLI.md, "frugal train options")
// The options come from the library's one table (train_options(), train.h): each value is parsed
// and validated into the typed TrainConfig here, at the edge; a refused value is exit 2 naming the
// option, the value and what is allowed, before anything is read or written.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <algorithm>
#include <utility>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "config_file.h"
#include "frugal/budget.h"
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

// --nproc N: PyTorch's launcher starts N ranks of this same command on this machine
// (torchrun --standalone picks a free port); frugal has no launcher of its own. torchrun exits 1
// when any rank exits non-zero, 75 included: rank 0 leaves its exit code in a file
// (FRUGAL_RANK0_EXIT_FILE) and this command exits with it, so that a stopped run is still exit 75.
// SIGINT/SIGTERM reach torchrun (which passes them to the ranks: they stop together, saved).
pid_t g_torchrun = 0;
void forward_signal(int sig) {
  if (g_torchrun > 0) ::kill(g_torchrun, sig);
}

int run_torchrun(int nproc, const std::vector<std::string>& args) {
  if (std::getenv("WORLD_SIZE"))
    fail(ErrorKind::usage, "--nproc", "a command that starts the ranks", "a rank of a run torchrun started already",
         "leave out --nproc when launching with torchrun");
  std::string self(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) fail(ErrorKind::io, "/proc/self/exe", "this program's path", "none", "run torchrun yourself (README)");
  self.resize(static_cast<std::size_t>(n));
  std::vector<std::string> cmd{"torchrun", "--standalone", "--nproc-per-node", std::to_string(nproc), "--no-python",
                               "--", self, "train"};
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--nproc" || args[i] == "--config") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc=", 0) == 0 || args[i].rfind("--config=", 0) == 0) continue;
    cmd.push_back(args[i]);
  }
  char exit_file[] = "/tmp/frugal-rank0-exit-XXXXXX";
  int fd = ::mkstemp(exit_file);
  if (fd < 0) fail(ErrorKind::io, "/tmp", "room for a temporary file", std::strerror(errno), "");
  ::close(fd);
  std::vector<char*> ptrs;
  for (auto& a : cmd) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  std::fflush(nullptr);
  int pipefd[2];  // the child reports a failed exec through it
  if (::pipe2(pipefd, O_CLOEXEC) != 0) fail(ErrorKind::io, "pipe", "a pipe", std::strerror(errno), "");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FRUGAL_RANK0_EXIT_FILE", exit_file, 1);
    ::execvp("torchrun", ptrs.data());
    int e = errno;
    [[maybe_unused]] auto w = ::write(pipefd[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int exec_errno = 0;
  const bool exec_failed = pid > 0 && ::read(pipefd[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(pipefd[0]);
  if (pid < 0 || exec_failed) {
    ::unlink(exit_file);
    fail(ErrorKind::usage, "--nproc " + std::to_string(nproc), "PyTorch's torchrun on the PATH to start the ranks",
         std::string("none (") + std::strerror(pid < 0 ? errno : exec_errno) + ")",
         "put the Python environment that has torch on the PATH (the set-up's: .venv/bin), or run torchrun yourself");
  }
  g_torchrun = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (std::FILE* f = std::fopen(exit_file, "r")) {
    int rank0 = -1;
    if (std::fscanf(f, "%d", &rank0) == 1 && rank0 >= 0) rc = rank0;
    std::fclose(f);
  }
  ::unlink(exit_file);
  return rc;
}

// Rank 0 of a run `--nproc` started: its exit code for the launching command.
void record_rank0_exit(int rc) {
  const char* file = std::getenv("FRUGAL_RANK0_EXIT_FILE");
  const char* rank = std::getenv("RANK");
  if (!file || !rank || std::string(rank) != "0") return;
  if (std::FILE* f = std::fopen(file, "w")) {
    std::fprintf(f, "%d\n", rc);
    std::fclose(f);
  }
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

  // The ranks get the options as this command read them, the config file's included, less --nproc
  // and --config: a rank that read nproc again would try to launch ranks of its own.
  if (config.nproc > 1) return run_torchrun(config.nproc, args);
  Progress::set_quiet(config.json);
  // A rank of a torchrun run: the launcher's signal to ranks still closing must not change their
  // exit code (SignalGuard::ignore_after_session).
  if (std::getenv("WORLD_SIZE")) SignalGuard::ignore_after_session();
  SessionOutcome out;
  try {
    out = train_session(config);
  } catch (const Error& e) {
    record_rank0_exit(exit_code(e.kind()));
    throw;
  } catch (...) {
    record_rank0_exit(1);
    throw;
  }
  record_rank0_exit(out.status == SessionOutcome::Status::done ? 0 : exit_code(ErrorKind::interrupted));
  const int rc = out.status == SessionOutcome::Status::done ? 0 : exit_code(ErrorKind::interrupted);
  const char* rank = std::getenv("RANK");  // of a torchrun run, rank 0 reports
  if (config.json && (!rank || std::string(rank) == "0")) print_json({{"run", config.run}, {"exit_code", rc}});
  return rc;
}

}  // namespace frugal::cli
