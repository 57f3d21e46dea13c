// Joining a split set, resumably.
//
// Resume design: the output grows as "<out>.frugal-join" (the partial output) and nothing else
// records progress. A rerun re-reads the partial output part by part, checking each range
// against the manifest's size and SHA-256; the longest good prefix is kept (its bytes also
// rebuild the whole-file SHA-256 state) and everything after it is cut off. Because a part is
// deleted (--delete-parts) only after the partial output holding it is synced, a part that is
// gone is always found in the partial output. No separate progress record can disagree with the
// data, at the price of re-reading the partial output once on resume.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "archive/manifest.h"
#include "archive/sha256_worker.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/progress.h"
#include "frugal/split.h"
#include "frugal/units.h"

namespace frugal {
namespace {
constexpr std::size_t kBufferSize = 8u << 20;

struct Joiner {
  const SplitManifest& m;
  const JoinOptions& opt;
  std::filesystem::path out, partial;
  // buf before whole: the worker may still be reading a buffer when an error unwinds us, and
  // members are destroyed in reverse order.
  std::vector<char> buf[2]{std::vector<char>(kBufferSize), std::vector<char>(kBufferSize)};
  std::unique_ptr<Sha256Worker> whole = std::make_unique<Sha256Worker>();
  Progress progress;
  JoinResult result;

  Joiner(const SplitManifest& manifest, const JoinOptions& options, std::filesystem::path output)
      : m(manifest), opt(options), out(std::move(output)), partial(join_partial_path(out)),
        progress("join " + manifest.name, manifest.size) {}

  // Hashes `size` bytes of fd (from `offset`, or the current position when pread is false) into
  // the part digest and the whole-file worker; `sink` (if >= 0) receives a copy.
  std::string hash_range(int fd, std::uint64_t offset, std::uint64_t size, bool positioned, int sink,
                         const std::string& name) {
    Sha256 part;
    int cur = 0;
    for (std::uint64_t done = 0; done < size;) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBufferSize, size - done));
      char* p = buf[cur].data();
      if (positioned)
        pread_full(fd, p, n, offset + done, name);
      else
        read_exact(fd, p, n, name);
      whole->submit(p, n);  // waits until the other buffer is free again
      part.update(p, n);
      if (sink >= 0) write_full(sink, p, n, partial.string());
      done += n;
      progress.advance(n);
      cur ^= 1;
    }
    whole->wait();
    return part.hex_digest();
  }

  static void read_exact(int fd, char* p, std::size_t n, const std::string& name) {
    while (n > 0) {
      ssize_t r = ::read(fd, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail_errno("read", name, errno);
      if (r == 0)
        fail(ErrorKind::invalid, name, std::to_string(n) + " more bytes", "end of file",
             "the part shrank while being joined; copy it again");
      p += r;
      n -= static_cast<std::size_t>(r);
    }
  }

  // Counts the parts the partial output already holds intact; feeds them to the whole digest.
  std::size_t verify_partial(int fd, std::uint64_t partial_size) {
    std::size_t good = 0;
    std::uint64_t offset = 0;
    bool corrupt = false;
    for (; good < m.parts.size(); ++good) {
      const auto& part = m.parts[good];
      if (offset + part.size > partial_size) break;
      if (hash_range(fd, offset, part.size, true, -1, partial.string()) != part.sha256) {
        corrupt = true;
        break;
      }
      offset += part.size;
    }
    if (corrupt) {  // the whole digest took in the bad range: rebuild it from the good prefix
      whole = std::make_unique<Sha256Worker>();
      offset = 0;
      for (std::size_t i = 0; i < good; offset += m.parts[i].size, ++i)
        hash_range(fd, offset, m.parts[i].size, true, -1, partial.string());
    }
    return good;
  }

  void check_part_file(std::size_t i) {
    const auto path = m.part_path(i);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      fail(ErrorKind::invalid, path.string(), "part " + std::to_string(i) + " of " + m.name, "no such file",
           opt.delete_parts && i > 0
               ? "if an earlier 'join {delete_parts}' removed it, its partial output " + partial.string() +
                     " was lost or changed and the set cannot be rebuilt; otherwise copy the part back"
               : "copy the part next to the manifest, then run the same join again");
    if (static_cast<std::uint64_t>(st.st_size) != m.parts[i].size)
      fail(ErrorKind::invalid, path.string(), std::to_string(m.parts[i].size) + " bytes (manifest)",
           std::to_string(st.st_size) + " bytes",
           "the part is truncated or damaged; copy it again, then run the same join again to continue");
  }

  [[noreturn]] void fail_sha(std::size_t i, const std::string& found) {
    fail(ErrorKind::invalid, m.part_path(i).string(), "SHA-256 " + m.parts[i].sha256 + " (manifest)",
         "SHA-256 " + found,
         "the part is damaged; copy it again from its source, then run the same join again to continue "
         "(parts already joined are kept)");
  }

  void remove_part(std::size_t i, int partial_fd) {
    if (opt.sync) fsync_fd(partial_fd, partial.string());
    if (::unlink(m.part_path(i).c_str()) != 0 && errno != ENOENT) fail_errno("remove", m.part_path(i).string(), errno);
    ++result.parts_deleted;
  }

  // With --delete-parts the first part becomes the partial output by a rename: no copy at all.
  bool adopt_first_part() {
    UniqueFd fd = open_read(m.part_path(0));
    std::string got = hash_range(fd.get(), 0, m.parts[0].size, false, -1, m.part_path(0).string());
    if (got != m.parts[0].sha256) fail_sha(0, got);
    if (::rename(m.part_path(0).c_str(), partial.c_str()) != 0) {
      if (errno == EXDEV) {  // another file system: copy it like the others, digest from scratch
        whole = std::make_unique<Sha256Worker>();
        return false;
      }
      fail_errno("rename", m.part_path(0).string(), errno);
    }
    if (opt.sync) fsync_dir(partial.parent_path().empty() ? "." : partial.parent_path());
    ++result.parts_deleted;
    return true;
  }

  void check_space(std::size_t from) {
    std::uint64_t need = 0;
    for (std::size_t i = from; i < m.parts.size(); ++i)
      need = opt.delete_parts ? std::max(need, m.parts[i].size) : need + m.parts[i].size;
    auto dir = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
    std::uint64_t free = free_space(dir);
    if (free < need)
      fail(ErrorKind::budget, dir.string(), format_size(need) + " free to join " + m.name,
           format_size(free) + " free",
           opt.delete_parts ? "free some space; nothing was changed"
                            : "free some space or use {delete_parts} (needs only the largest part free); "
                              "nothing was changed");
  }

  JoinResult run() {
    std::size_t next = 0;
    std::uint64_t offset = 0;
    bool have_partial = std::filesystem::exists(partial);
    UniqueFd pfd;
    if (have_partial) {
      int fd = ::open(partial.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) fail_errno("open", partial.string(), errno);
      pfd = UniqueFd(fd);
      next = verify_partial(pfd.get(), std::filesystem::file_size(partial));
      for (std::size_t i = 0; i < next; ++i) offset += m.parts[i].size;
      result.parts_resumed = next;
      if (next > 0) note("join: continuing " + partial.string() + " after " + std::to_string(next) + " part(s)");
    }
    check_space(next);
    if (!have_partial && opt.delete_parts && !m.parts.empty()) {
      check_part_file(0);
      if (adopt_first_part()) {
        offset = m.parts[0].size;
        next = 1;
        if (opt.after_part) opt.after_part(0);
      }
    }
    if (!pfd) {
      int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0) fail_errno("create", partial.string(), errno);
      pfd = UniqueFd(fd);
    }
    if (::ftruncate(pfd.get(), static_cast<off_t>(offset)) != 0) fail_errno("truncate", partial.string(), errno);
    if (::lseek(pfd.get(), static_cast<off_t>(offset), SEEK_SET) < 0) fail_errno("seek", partial.string(), errno);

    for (std::size_t i = next; i < m.parts.size(); ++i) {
      check_part_file(i);
      UniqueFd fd = open_read(m.part_path(i));
      ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
      std::string got = hash_range(fd.get(), 0, m.parts[i].size, false, pfd.get(), m.part_path(i).string());
      if (got != m.parts[i].sha256) {
        // Cut the bad bytes off so the partial output stays a good prefix for the rerun.
        if (::ftruncate(pfd.get(), static_cast<off_t>(offset)) != 0) fail_errno("truncate", partial.string(), errno);
        fail_sha(i, got);
      }
      offset += m.parts[i].size;
      if (opt.delete_parts) remove_part(i, pfd.get());
      if (opt.after_part) opt.after_part(i);
    }
    progress.finish();

    std::string sha = whole->hex_digest();
    if (sha != m.sha256)
      fail(ErrorKind::invalid, partial.string(), "SHA-256 " + m.sha256 + " for " + m.name + " (manifest)",
           "SHA-256 " + sha + " although every part matched",
           "the manifest contradicts itself; the joined bytes are kept in " + partial.string() +
               "; split the original again");
    if (opt.sync) fsync_fd(pfd.get(), partial.string());
    if (::close(pfd.release()) != 0) fail_errno("close", partial.string(), errno);
    if (::rename(partial.c_str(), out.c_str()) != 0) fail_errno("rename", out.string(), errno);
    if (opt.sync) fsync_dir(out.parent_path().empty() ? "." : out.parent_path());
    result.output = out;
    result.size = m.size;
    result.sha256 = sha;
    result.parts = m.parts.size();
    return result;
  }
};
}  // namespace

std::filesystem::path join_partial_path(const std::filesystem::path& output) {
  return output.string() + ".frugal-join";
}

JoinResult join_parts(const std::filesystem::path& manifest_path, const JoinOptions& options) {
  SplitManifest m = SplitManifest::load(manifest_path);
  // The manifest's "name" comes from a download: it becomes a path only through confine_path
  // (a plain name in the manifest's folder, no symlink there), and so does the partial output.
  const std::string where = manifest_path.string();
  std::filesystem::path out = options.output.empty() ? confine_path(m.dir, m.name, where) : options.output;
  const std::filesystem::path partial = join_partial_path(out);
  if (options.output.empty()) confine_path(m.dir, partial.filename().string(), where);
  struct stat st {};
  if (::lstat(partial.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(ErrorKind::invalid, partial.string(), "a regular file (an interrupted join's partial output)",
         S_ISLNK(st.st_mode) ? "a symbolic link" : "another kind of file",
         "join writes through no link; remove it, then run the same join again");
  if (std::filesystem::exists(out))
    fail(ErrorKind::usage, out.string(), "no file at the output path", "an existing file",
         "remove it or give another path with -o");
  return Joiner(m, options, out).run();
}

}  // namespace frugal
