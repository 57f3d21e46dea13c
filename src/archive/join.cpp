// Joining a split set, resumably, one join at a time.
//
// Resume design: the output grows as "<out>.frugal-join" (the partial output) and nothing else
// records progress. A rerun re-reads the partial output part by part, checking each range
// against the manifest's size and SHA-256; the longest good prefix is kept (its bytes also
// rebuild the whole-file SHA-256 state) and everything after it is cut off. Because a part is
// deleted (--delete-parts) only after the partial output holding it is synced and read back, a
// part that is gone is always found in the partial output. No separate progress record can
// disagree with the data, at the price of re-reading the partial output once on resume.
//
// What the digests are about: every SHA-256 is taken from the bytes of the output file itself,
// read back after they are written, never from the parts on their way in. So "SHA-256 verified"
// is a statement about the file the user keeps, and a part is deleted only once its bytes are
// proven to be in the output.
//
// One join at a time: a join holds a lock (flock, fs.h's FileLock) on its manifest for its whole
// run, and on the partial output from the moment it exists until it has its final name, so a
// second join of the same set, or of another set into the same output, stops at once naming the
// first (a notebook cell run twice). Nothing ever replaces an existing output: the partial is
// published with a rename that fails when the name is taken (no_clobber.h).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "archive/manifest.h"
#include "archive/no_clobber.h"
#include "archive/sha256_worker.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"
#include "frugal/archive/split.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {
constexpr std::size_t kBufferSize = 8u << 20;
constexpr std::size_t kNameMax = 255;  // as temp_path_for: NAME_MAX of every file system frugal writes to
constexpr std::string_view kPartialSuffix = ".frugal-join";

bool same_file(int fd, const std::filesystem::path& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

[[noreturn]] void fail_in_use(const std::filesystem::path& path, const std::string& what) {
  const std::string who = FileLock::holder(path);
  fail(ErrorKind::io, path.string(), "", "",
       what + " is in use by another frugal process" + (who.empty() ? std::string() : " (" + who + ")") +
           "; this join did not start: let it finish or stop it, then run the same command again");
}

// Takes flock(LOCK_EX) on fd without waiting, or fails naming who holds `path`.
void lock_or_fail(int fd, const std::filesystem::path& path, const std::string& what) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  if (errno == EWOULDBLOCK) fail_in_use(path, what);
  fail_errno("lock", path.string(), errno);
}

struct Joiner {
  const SplitManifest& m;
  const JoinOptions& opt;
  std::filesystem::path out, partial;
  // buf before whole: the worker may still be reading a buffer when an error unwinds us, and
  // members are destroyed in reverse order.
  std::vector<char> buf[2]{std::vector<char>(kBufferSize), std::vector<char>(kBufferSize)};
  std::unique_ptr<Sha256Worker> whole = std::make_unique<Sha256Worker>();
  UniqueFd pfd;      // the partial output, read-write
  UniqueFd lock_fd;  // holds the lock on the partial output's inode until it is published
  Progress progress;
  JoinResult result;

  Joiner(const SplitManifest& manifest, const JoinOptions& options, std::filesystem::path output)
      : m(manifest),
        opt(options),
        out(std::move(output)),
        partial(join_partial_path(out)),
        progress("join " + manifest.name, manifest.size) {}

  // SHA-256 of `size` bytes of fd from `offset`; with feed_whole they also go to the whole-file
  // digest (the bytes of the output, in order).
  std::string digest_range(int fd, std::uint64_t offset, std::uint64_t size, bool feed_whole, const std::string& name) {
    Sha256 part;
    int cur = 0;
    for (std::uint64_t done = 0; done < size;) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBufferSize, size - done));
      char* p = buf[cur].data();
      pread_full(fd, p, n, offset + done, name);
      if (feed_whole) whole->submit(p, n);
      part.update(p, n);
      done += n;
      cur ^= 1;
    }
    if (feed_whole) whole->wait();
    return part.hex_digest();
  }

  // Copies `size` bytes from src (sequentially) to the partial output at its current position.
  void copy(int src, std::uint64_t size, const std::string& name) {
    char* p = buf[0].data();
    for (std::uint64_t done = 0; done < size;) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBufferSize, size - done));
      read_exact(src, p, n, name);
      write_full(pfd.get(), p, n, partial.string());
      done += n;
      progress.advance(n);
    }
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

  void cut_partial(std::uint64_t size) {
    if (::ftruncate(pfd.get(), static_cast<off_t>(size)) != 0) fail_errno("truncate", partial.string(), errno);
  }

  // Counts the parts the partial output already holds intact and feeds them to the whole digest;
  // cuts off what follows them, but only bytes this join can rebuild: a range that is not part k
  // while part k's file is gone, or a partial output whose first part is not this set's (another
  // set's interrupted join into the same output, after --delete-parts its only copy), is kept
  // and refused.
  std::size_t resume_partial() {
    struct stat st {};
    if (::fstat(pfd.get(), &st) != 0) fail_errno("stat", partial.string(), errno);
    const auto partial_size = static_cast<std::uint64_t>(st.st_size);
    std::size_t good = 0;
    std::uint64_t offset = 0;
    bool corrupt = false;
    for (; good < m.parts.size(); ++good) {
      const auto& part = m.parts[good];
      if (offset + part.size > partial_size) break;
      if (digest_range(pfd.get(), offset, part.size, true, partial.string()) != part.sha256) {
        corrupt = true;
        break;
      }
      offset += part.size;
    }
    if (corrupt && good == 0)
      fail(ErrorKind::invalid, partial.string(), "the partial output of a join of " + m.name + " (its first part)",
           "other bytes",
           "it may be another set's interrupted join into the same output, which continues "
           "with that set's manifest; if it is not, remove it, then run the same join again; nothing was changed");
    if (partial_size > offset && good < m.parts.size()) {
      struct stat ps {};
      if (::stat(m.part_path(good).c_str(), &ps) != 0)
        fail(ErrorKind::invalid, partial.string(),
             "part " + std::to_string(good) + " of " + m.name + " in the partial output, or its file " +
                 m.part_path(good).string(),
             corrupt ? "other bytes there, and no part file" : "a partial copy, and no part file",
             "copy the part back next to the manifest, then run the same join again; the partial output "
             "was kept as it is");
    }
    if (corrupt) {  // the whole digest took in the bad range: rebuild it from the good prefix
      whole = std::make_unique<Sha256Worker>();
      offset = 0;
      for (std::size_t i = 0; i < good; offset += m.parts[i].size, ++i)
        digest_range(pfd.get(), offset, m.parts[i].size, true, partial.string());
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

  // Only after append_part: the part's bytes are synced in the output and read back good.
  void remove_part(std::size_t i) {
    if (::unlink(m.part_path(i).c_str()) != 0 && errno != ENOENT) fail_errno("remove", m.part_path(i).string(), errno);
    ++result.parts_deleted;
  }

  // With --delete-parts the first part becomes the partial output by a rename: no copy at all. It
  // is locked before the rename, so the partial output is never visible unlocked. False when it
  // must be copied instead (a link, another file system).
  bool adopt_first_part() {
    const auto path = m.part_path(0);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    UniqueFd fd = open_regular(path, Links::refuse);
    lock_or_fail(fd.get(), path, "its first part");
    std::string got = digest_range(fd.get(), 0, m.parts[0].size, true, path.string());
    if (got != m.parts[0].sha256) fail_sha(0, got);
    bool cross_device = false;
    if (!rename_no_replace(path, partial, &cross_device)) {
      whole = std::make_unique<Sha256Worker>();
      if (cross_device) return false;
      fail_in_use(partial, "the partial output " + partial.string() + " (it appeared while this join started)");
    }
    if (opt.sync) fsync_dir(partial.parent_path().empty() ? "." : partial.parent_path());
    int w = ::open(partial.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (w < 0) fail_errno("open", partial.string(), errno);
    pfd = UniqueFd(w);
    if (!same_file(pfd.get(), partial) || !same_file(fd.get(), partial))
      fail_in_use(partial, "the partial output (replaced while this join started)");
    lock_fd = std::move(fd);
    progress.advance(m.parts[0].size);
    ++result.parts_deleted;
    return true;
  }

  // Opens and locks an existing partial output, or creates it; false when none existed.
  bool open_partial() {
    bool existed = true;
    int fd = ::open(partial.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
      existed = false;
      fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0 && errno == EEXIST) fail_in_use(partial, "the partial output (it appeared while this join started)");
    }
    if (fd < 0) fail_errno(existed ? "open" : "create", partial.string(), errno);
    pfd = UniqueFd(fd);
    struct stat st {};
    if (::fstat(pfd.get(), &st) != 0) fail_errno("stat", partial.string(), errno);
    if (!S_ISREG(st.st_mode))
      fail(ErrorKind::invalid, partial.string(), "a regular file (an interrupted join's partial output)",
           file_kind(partial), "remove it, then run the same join again");
    lock_or_fail(pfd.get(), partial, "the partial output");
    // Another join of this output may have published it (renamed it away) before we locked it.
    if (!same_file(pfd.get(), partial))
      fail_in_use(partial, "the partial output (published by another join meanwhile)");
    lock_fd = UniqueFd(::dup(pfd.get()));  // the lock must outlive pfd's close, until the rename
    if (!lock_fd) fail_errno("dup", partial.string(), errno);
    return existed;
  }

  void check_space(std::size_t from) {
    std::uint64_t need = 0;
    for (std::size_t i = from; i < m.parts.size(); ++i)
      need = opt.delete_parts ? std::max(need, m.parts[i].size) : need + m.parts[i].size;
    auto dir = out.parent_path().empty() ? std::filesystem::path(".") : out.parent_path();
    std::uint64_t free = free_space(dir);
    if (free < need)
      fail(ErrorKind::budget, dir.string(), format_size(need) + " free to join " + m.name, format_size(free) + " free",
           opt.delete_parts ? "free some space; nothing was changed"
                            : "free some space or use {delete_parts} (needs only the largest part free); "
                              "nothing was changed");
  }

  // Copies part i to the end of the partial output (at `offset`), then reads it back: the digest
  // of what the output holds decides. On a mismatch the source is hashed to say which side is bad.
  void append_part(std::size_t i, std::uint64_t offset) {
    check_part_file(i);
    const auto path = m.part_path(i);
    UniqueFd fd = open_regular(path, Links::follow);
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    copy(fd.get(), m.parts[i].size, path.string());
    if (opt.after_copy) opt.after_copy(i);
    if (opt.sync) fsync_fd(pfd.get(), partial.string());
    const std::string written = digest_range(pfd.get(), offset, m.parts[i].size, true, partial.string());
    if (written == m.parts[i].sha256) return;
    // Cut the bad bytes off so the partial output stays a good prefix for the rerun.
    cut_partial(offset);
    const std::string source = digest_range(fd.get(), 0, m.parts[i].size, false, path.string());
    if (source != m.parts[i].sha256) fail_sha(i, source);
    fail(ErrorKind::io, partial.string(),
         "part " + std::to_string(i) + " (SHA-256 " + m.parts[i].sha256 + ") as written from " + path.string(),
         "SHA-256 " + written + " when read back",
         "the disk or another program changed the output while it was written; nothing was deleted; run the "
         "same join again (check the disk if it happens again)");
  }

  JoinResult run() {
    std::size_t next = 0;
    std::uint64_t offset = 0;
    struct stat st {};
    const bool have_partial = ::lstat(partial.c_str(), &st) == 0;
    if (have_partial) {
      open_partial();
      next = resume_partial();
      for (std::size_t i = 0; i < next; ++i) offset += m.parts[i].size;
      result.parts_resumed = next;
      progress.advance(offset);
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
    if (!pfd) open_partial();
    cut_partial(offset);
    if (::lseek(pfd.get(), static_cast<off_t>(offset), SEEK_SET) < 0) fail_errno("seek", partial.string(), errno);

    for (std::size_t i = next; i < m.parts.size(); ++i) {
      append_part(i, offset);
      offset += m.parts[i].size;
      if (opt.delete_parts) remove_part(i);
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
    if (!rename_no_replace(partial, out))
      fail(ErrorKind::io, out.string(), "no file at the output path", "a file that appeared while joining",
           "the joined file is kept in " + partial.string() + "; move one of them away, then run the same join again");
    if (opt.sync) fsync_dir(out.parent_path().empty() ? "." : out.parent_path());
    result.output = out;
    result.size = m.size;
    result.sha256 = sha;
    result.parts = m.parts.size();
    return result;
  }
};

// A rerun of a finished join: the output is there. It is the join's result only when it holds
// exactly the manifest's bytes; then the command has nothing left to do but, with --delete-parts,
// remove parts still present. Anything else is someone's file, never touched.
JoinResult check_existing_output(const SplitManifest& m, const JoinOptions& opt, const std::filesystem::path& out) {
  const std::string what = "the file " + m.name + " joined (" + std::to_string(m.size) + " bytes, SHA-256 " + m.sha256 +
                           " per the manifest)";
  const std::string hint = "nothing was changed; move it away or give another path with -o";
  struct stat st {};
  if (::lstat(out.c_str(), &st) != 0) fail_errno("stat", out.string(), errno);
  if (S_ISDIR(st.st_mode))
    fail(ErrorKind::usage, out.string(), "a file path for the output", "a folder", "give a file path with -o");
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::invalid, out.string(), what, file_kind(out), hint);
  if (static_cast<std::uint64_t>(st.st_size) != m.size)
    fail(ErrorKind::invalid, out.string(), what, "a different file of " + std::to_string(st.st_size) + " bytes", hint);
  UniqueFd fd = open_regular(out, Links::refuse);
  Progress progress("verify " + m.name, m.size);
  Sha256 sha;
  std::vector<char> buf(kBufferSize);
  for (std::uint64_t done = 0; done < m.size;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), m.size - done));
    pread_full(fd.get(), buf.data(), n, done, out.string());
    sha.update(buf.data(), n);
    done += n;
    progress.advance(n);
  }
  progress.finish();
  const std::string got = sha.hex_digest();
  if (got != m.sha256) fail(ErrorKind::invalid, out.string(), what, "a different file (SHA-256 " + got + ")", hint);
  JoinResult r;
  r.output = out;
  r.size = m.size;
  r.sha256 = got;
  r.parts = m.parts.size();
  r.already_joined = true;
  if (opt.delete_parts)
    for (std::size_t i = 0; i < m.parts.size(); ++i) {
      struct stat ps {};
      const auto path = m.part_path(i);
      if (::lstat(path.c_str(), &ps) != 0 || !S_ISREG(ps.st_mode)) continue;
      if (::unlink(path.c_str()) != 0) fail_errno("remove", path.string(), errno);
      ++r.parts_deleted;
    }
  return r;
}
}  // namespace

std::filesystem::path join_partial_path(const std::filesystem::path& output) {
  std::string name = output.filename().string();
  if (name.size() + kPartialSuffix.size() > kNameMax) {
    // An output name that nearly fills NAME_MAX: cut it (at a UTF-8 character boundary) and add a
    // digest of the whole name, so two long names that share a beginning still differ.
    const std::string tag = "~" + sha256_hex(name).substr(0, 8);
    std::size_t keep = kNameMax - kPartialSuffix.size() - tag.size();
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name = name.substr(0, keep) + tag;
  }
  return output.parent_path() / (name + std::string(kPartialSuffix));
}

JoinResult join_parts(const std::filesystem::path& manifest_path, const JoinOptions& options) {
  // Held for the whole join: a second join of this set stops here, before it reads or writes.
  FileLock set_lock = [&] {
    if (auto l = FileLock::try_lock(manifest_path)) return std::move(*l);
    fail_in_use(manifest_path, "the split set of this manifest");
  }();
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
         file_kind(partial), "join writes through no link; remove it, then run the same join again");
  if (::lstat(out.c_str(), &st) == 0) return check_existing_output(m, options, out);
  return Joiner(m, options, out).run();
}

}  // namespace frugal
