// The sub-commands as one table over a thin main (ninja's src/ninja.cc).
//
// Two executables share this table: `frugal` links no LibTorch, so archive commands start in
// milliseconds; commands that need LibTorch are handed to `frugal-torch` beside it (git-style).
#pragma once

#include <span>

namespace frugal::cli {

using Handler = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  bool needs_torch;
  Handler handler;  // null in the executable that does not carry it
};

std::span<const Command> commands();

// Handlers; each lives in cmd_<name>.cpp.
int cmd_pack(int, char**);
int cmd_split(int, char**);
int cmd_join(int, char**);
int cmd_verify(int, char**);
int cmd_ls(int, char**);
int cmd_extract(int, char**);
int cmd_du(int, char**);
int cmd_clean(int, char**);
int cmd_doctor(int, char**);
int cmd_train(int, char**);
int cmd_eval(int, char**);
int cmd_predict(int, char**);
int cmd_compress(int, char**);
int cmd_export(int, char**);
int cmd_bench(int, char**);
int cmd_report(int, char**);

}  // namespace frugal::cli
