#include "archive/no_clobber.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "frugal/util/error.h"

namespace frugal {

bool rename_no_replace(const std::filesystem::path& from, const std::filesystem::path& to, bool* cross_device) {
  if (cross_device) *cross_device = false;
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  int err = errno;
  if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
    // No RENAME_NOREPLACE here (some network and FUSE file systems): a hard link is just as
    // exclusive, then the old name goes.
    if (::link(from.c_str(), to.c_str()) == 0) {
      if (::unlink(from.c_str()) != 0) fail_errno("remove", from.string(), errno);
      return true;
    }
    err = errno;
  }
  if (err == EEXIST || err == ENOTEMPTY) return false;
  if (err == EXDEV && cross_device) {
    *cross_device = true;
    return false;
  }
  fail_errno("rename", to.string(), err);
}

UniqueFd open_unnamed(const std::filesystem::path& dir) {
  const std::filesystem::path d = dir.empty() ? std::filesystem::path(".") : dir;
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  if (fd >= 0) return UniqueFd(fd);
  if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) return UniqueFd();
  fail_errno("create a file in", d.string(), errno);
}

bool link_unnamed(int fd, const std::filesystem::path& to) {
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  if (::linkat(AT_FDCWD, proc, AT_FDCWD, to.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
  if (errno == EEXIST) return false;
  fail_errno("create", to.string(), errno);
}

}  // namespace frugal
