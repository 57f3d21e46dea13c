// Publishing a file under its final name without ever replacing what is already there.
//
// A check ("does the target exist?") followed by rename(2) leaves a window in which a file that
// appears meanwhile (the user's, another process's output) is silently replaced. These calls make
// the check and the publication one step: the kernel fails them with EEXIST instead.
#pragma once

#include <filesystem>

#include "frugal/util/fs.h"

namespace frugal {

// rename(from, to) unless `to` exists: renameat2(RENAME_NOREPLACE); on file systems without it,
// link(2) + unlink(2) (the link fails when `to` exists). Returns false, changing nothing, when
// `to` exists (a file, a folder, a link, anything). Throws Error(io) for other failures; EXDEV is
// reported as false with *cross_device set when given, so a caller can copy instead.
bool rename_no_replace(const std::filesystem::path& from, const std::filesystem::path& to,
                       bool* cross_device = nullptr);

// A file with no name yet in folder `dir` (O_TMPFILE, opened read-write, mode 0644 less the
// umask): a process killed while writing it leaves nothing behind. An invalid fd when the file
// system cannot make one (EOPNOTSUPP, EISDIR, EINVAL; then write a named temporary instead);
// throws Error(io) for other failures (ENOSPC, EACCES, ...).
UniqueFd open_unnamed(const std::filesystem::path& dir);

// Gives the unnamed file `fd` (from open_unnamed) the name `to`. Returns false, changing
// nothing, when `to` exists. Throws Error(io) for other failures.
bool link_unnamed(int fd, const std::filesystem::path& to);

}  // namespace frugal
