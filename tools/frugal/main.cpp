// frugal: thin main over the command table in commands.cpp.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "frugal/util/error.h"
#include "frugal/util/terminal.h"
#include "frugal/util/version.h"
#include "frugal/util/host_memory.h"

namespace {

using frugal::cli::Command;

void usage(std::FILE* out) {
  std::fprintf(out,
               "frugal %s: train image models well on small, fragile machines\n\n"
               "usage: frugal COMMAND [ARGS] [OPTIONS]\n       frugal COMMAND --help\n\n"
               "commands:\n",
               frugal::kVersion);
  for (const Command& c : frugal::cli::commands()) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nexit codes: 0 done, 1 failure, 2 usage error, 3 bad or unsafe input,\n"
               "            4 budget would be exceeded, 75 stopped early but resumable\n");
}

#if !defined(FRUGAL_TORCH_EXECUTABLE) && defined(FRUGAL_BUILT_TORCH)
// "2.11" of "2.11.0+cu130".
std::string major_minor(const std::string& v) {
  const auto a = v.find('.');
  const auto b = a == std::string::npos ? a : v.find_first_not_of("0123456789", a + 1);
  return v.substr(0, b);
}

// A wheel's programs (site-packages/frugal/bin/) run on the torch installed beside them
// (site-packages/torch/): one of another release cannot be loaded (its symbols differ), and the
// loader's "undefined symbol" would be all the user saw. Said before frugal-torch is started: 0
// when it may start (a build tree's, whose RPATH names its own torch, finds no version.py here).
int installed_torch_matches(const std::filesystem::path& dir, const char* command) {
  const std::filesystem::path version_py = dir / ".." / ".." / "torch" / "version.py";
  std::FILE* f = std::fopen(version_py.c_str(), "r");
  if (!f) return 0;
  char line[256];
  std::string installed;
  while (installed.empty() && std::fgets(line, sizeof line, f)) {
    const std::string l(line);
    if (l.rfind("__version__", 0) != 0) continue;
    const auto q = l.find_first_of("'\""), e = q == std::string::npos ? q : l.find(l[q], q + 1);
    if (e != std::string::npos) installed = l.substr(q + 1, e - q - 1);
  }
  std::fclose(f);
  const std::string built = FRUGAL_BUILT_TORCH;
  if (installed.empty() || major_minor(installed) == major_minor(built)) return 0;
  std::fprintf(stderr,
               "frugal %s: this frugal was built for torch %s, but the torch installed beside it is %s (%s): its "
               "libraries cannot be loaded by this build; install the frugal wheel made for torch %s (`make wheel` "
               "in a checkout whose .venv has it), or pip install 'torch==%s.*'\n",
               command, built.c_str(), installed.c_str(), version_py.lexically_normal().c_str(),
               major_minor(installed).c_str(), major_minor(built).c_str());
  return 1;
}
#endif

// The torch-free executable hands torch commands to frugal-torch, found beside itself.
int hand_to_torch_executable(char** argv) {
#ifdef FRUGAL_TORCH_EXECUTABLE
  (void)argv;
  std::fprintf(stderr, "frugal: internal error: command missing from frugal-torch\n");
  return 1;
#else
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::filesystem::path dir =
      n > 0 ? std::filesystem::path(std::string(self, n)).parent_path() : std::filesystem::path(".");
  std::filesystem::path torch_exe = dir / "frugal-torch";
#ifdef FRUGAL_BUILT_TORCH
  if (int rc = installed_torch_matches(dir, argv[1])) return rc;
#endif
  ::execv(torch_exe.c_str(), argv);
  std::fprintf(stderr,
               "frugal %s: this command needs LibTorch, in %s, which could not be started (%s); "
               "build it with 'make build' or check the installation\n",
               argv[1], torch_exe.c_str(), std::strerror(errno));
  return 1;
#endif
}

// A message that already starts with "frugal NAME" (a `where` of "frugal compress") would print
// the command twice; the prefix this main adds is the only one.
std::string without_prefix(const std::string& what, const char* name) {
  for (const std::string& p : {std::string("frugal ") + name + ": ", std::string("frugal: ")})
    if (what.rfind(p, 0) == 0) return what.substr(p.size());
  return what;
}

// An unexpected exception's text, which may run over several lines (LibTorch's and TorchScript's
// carry a traceback): each line escaped as printable() does, so that text from data cannot drive
// the terminal, but the lines kept as lines (they were one line of literal "\n"s) and indented
// under the first, so that none reads as a line of frugal's own.
std::string printable_lines(const std::string& what) {
  std::string out;
  std::size_t start = 0;
  while (start < what.size()) {
    std::size_t end = what.find('\n', start);
    if (end == std::string::npos) end = what.size();
    if (start > 0) out += "\n  ";
    out += frugal::printable(std::string_view(what).substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef FRUGAL_TORCH_EXECUTABLE
  frugal::keep_freed_host_memory();  // before torch allocates: see host_memory.h
#endif
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
#ifdef FRUGAL_BUILT_TORCH
    std::printf("frugal %s (built for torch %s)\n", frugal::kVersion, FRUGAL_BUILT_TORCH);
#else
    std::printf("frugal %s\n", frugal::kVersion);
#endif
    return 0;
  }
  for (const Command& c : frugal::cli::commands()) {
    if (name != c.name) continue;
    if (!c.handler) return hand_to_torch_executable(argv);
    try {
      return c.handler(argc - 1, argv + 1);
    } catch (const frugal::Error& e) {
      // Messages name files and entries from data: escaped, so that they cannot drive the terminal.
      std::fprintf(stderr, "frugal %s: %s\n", c.name,
                   frugal::printable(frugal::cli::fit_advice(without_prefix(e.what(), c.name), c.name)).c_str());
      return frugal::exit_code(e.kind());
    } catch (const std::filesystem::filesystem_error& e) {
      // A file-system call no library wrapped: the user's disk or path, not a bug (exit 1 either way).
      std::fprintf(stderr, "frugal %s: %s: %s; check the path and its permissions\n", c.name,
                   frugal::printable(e.path1().string()).c_str(), e.code().message().c_str());
      return frugal::exit_code(frugal::ErrorKind::io);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "frugal %s: internal error: %s\n", c.name, printable_lines(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "frugal: unknown command '%s'; run 'frugal --help' for the list\n",
               frugal::printable(name).c_str());
  return 2;
}
