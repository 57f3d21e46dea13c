// A folder read as an archive: its files, listed once and sorted by name, read with pread.
//
// Nothing is followed out of the folder. A link to a file is an entry only when its target lies
// inside the folder (realpath), and is then read as that target; a link to a folder inside it is
// walked as that folder, its files named below the link, unless that folder is one the walk came
// through (a link to an ancestor: a cycle, never followed). Links out of the folder, cycles and
// dangling links are listed with where they lead (ZipEntry::link_target) and never followed.
// Every open names its path below the folder's descriptor with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS (openat2; O_NOFOLLOW on the last component where the kernel predates it),
// so a link planted after the listing is not followed either (a followed link's folder is opened
// by where it really is). Other links, FIFOs, devices and sockets are listed (entry_problem()
// names them) and never opened: a FIFO would block a reader forever. A file whose size changed
// since the listing is an error naming it, not a short read.
// Without openat2 (old kernels, old container profiles) only the last component is held to
// O_NOFOLLOW: a folder on the way swapped for a link after the listing would be followed.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "archive/name_encoding.h"
#include "archive/readers.h"
#include "archive/zip_index.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxDepth = 256;

// openat2 beneath `root` without any symbolic link; -1 with errno set on failure.
int open_beneath(int root, const std::string& rel, int flags) {
  static std::atomic<bool> have_openat2{true};  // reader threads share it
  if (have_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
    // Kernels before 5.6 lack it (ENOSYS); container seccomp profiles older than it refuse it (EPERM).
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
    have_openat2.store(false, std::memory_order_relaxed);
  }
  return ::openat(root, rel.c_str(), flags | O_CLOEXEC | O_NOFOLLOW);
}

// The empty source a folder archive has: what it reads are files, not one byte range. files()
// names the folder, so that extract never writes over it.
class FolderSource final : public ByteSource {
 public:
  explicit FolderSource(fs::path root) : root_(std::move(root)) {}
  std::uint64_t size() const override { return 0; }
  void read_at(std::uint64_t offset, void*, std::size_t n) const override {
    if (n == 0 && offset == 0) return;
    fail(ErrorKind::usage, root_.string(), "a read of one of its files", "a read of the folder as bytes", "");
  }
  std::vector<fs::path> files() const override { return {root_}; }

 private:
  fs::path root_;
};

class FolderArchive final : public Archive {
 public:
  FolderArchive(const fs::path& root, const ArchiveOptions& options) : root_(root), source_(root) {
    root_fd_ = UniqueFd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd_) fail_errno("open folder", root.string(), errno);
    char* real = ::realpath(root.c_str(), nullptr);
    if (!real) fail_errno("resolve", root.string(), errno);
    real_root_ = real;
    std::free(real);
    display_ = root.string();
    walk(options);
  }

  const char* format() const override { return "folder"; }
  const std::vector<ZipEntry>& entries() const override { return entries_; }
  std::optional<std::size_t> find(std::string_view name) const override {
    if (auto i = by_name_.find(entries_, name)) return *i;
    return std::nullopt;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return source_; }

  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    const ZipEntry& e = readable(i);
    out.resize(static_cast<std::size_t>(e.size));
    if (e.is_dir) return;
    UniqueFd fd = open_file(i);
    if (!out.empty()) pread_full(fd.get(), out.data(), out.size(), 0, where(i));
    check_unchanged(fd.get(), i);
  }

  // In pieces, the first of at most 4 KiB: a reader that wants a file's first bytes (its type,
  // read_entry_head) stops after one small read, whatever the file's size.
  void read_to(std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) const override {
    constexpr std::size_t kChunk = std::size_t{4} << 20, kFirst = 4096;
    const ZipEntry& e = readable(i);
    if (e.size == 0 || e.is_dir) return Archive::read_to(i, sink);
    UniqueFd fd = open_file(i);
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, e.size)));
    for (std::uint64_t done = 0; done < e.size;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(done == 0 ? kFirst : kChunk, e.size - done));
      pread_full(fd.get(), buf.data(), n, done, where(i));
      sink(std::span<const std::uint8_t>(buf.data(), n));
      done += n;
    }
    check_unchanged(fd.get(), i);
  }

  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t) const override { return std::nullopt; }

  fs::path file(std::size_t i) const { return root_ / target_[i]; }

 private:
  std::string where(std::size_t i) const { return display_ + ":" + entries_[i].name; }

  const ZipEntry& readable(std::size_t i) const {
    if (i >= entries_.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(entries_.size()), std::to_string(i),
           "");
    const ZipEntry& e = entries_[i];
    if (!e.is_symlink && e.special == SpecialMember::none) return e;
    std::string what = entry_problem(e);
    fail(ErrorKind::unsupported, where(i), "a file", what.substr(0, what.find(" (")),
         "frugal reads only files inside the folder; copy the file itself in");
  }

  UniqueFd open_file(std::size_t i) const {
    UniqueFd fd(open_beneath(root_fd_.get(), target_[i], O_RDONLY | O_NONBLOCK));
    if (!fd) {
      if (errno == ELOOP || errno == EXDEV)
        fail(ErrorKind::invalid, where(i), "the file listed", "a symbolic link in its place (changed after listing)",
             "let whatever is changing the folder finish, then run the command again");
      fail_errno("open", where(i), errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail_errno("stat", where(i), errno);
    if (!S_ISREG(st.st_mode))
      fail(ErrorKind::invalid, where(i), "a regular file", file_kind(file(i)),
           "let whatever is changing the folder finish, then run the command again");
    return fd;
  }

  // A file may change while it is read (a copy still running, a download): bytes of two versions
  // are not one image. Its size is held to the listing's, before and after the read.
  void check_unchanged(int fd, std::size_t i) const {
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail_errno("stat", where(i), errno);
    if (static_cast<std::uint64_t>(st.st_size) != entries_[i].size)
      fail(ErrorKind::invalid, where(i), std::to_string(entries_[i].size) + " bytes, as when the folder was listed",
           std::to_string(st.st_size) + " bytes",
           "the file changed while being read; let the copy finish, then run the command again");
  }

  struct Found {
    std::string raw;     // the path below the root, '/'-separated, as bytes
    std::string target;  // what is opened (the link's target for a link kept as a file)
    struct stat st {};
    bool link = false;
    LinkTarget link_target = LinkTarget::unknown;
  };

  // A folder to walk: its name below the root (through followed links), where it really is below
  // the root (no link on the way, as open_beneath needs), and where the folders walked on the way
  // to it really are: a link back to one of them is a cycle.
  struct Pending {
    std::string dir, real;
    std::size_t depth = 0;
    std::vector<std::string> above;
  };

  void walk(const ArchiveOptions& options) {
    std::vector<Found> found;
    std::vector<Pending> pending{{"", "", 0, {}}};
    while (!pending.empty()) {
      Pending p = std::move(pending.back());
      pending.pop_back();
      const std::string& dir = p.dir;
      const std::size_t depth = p.depth;
      UniqueFd dfd(p.real.empty() ? ::dup(root_fd_.get())
                                  : open_beneath(root_fd_.get(), p.real, O_RDONLY | O_DIRECTORY));
      if (!dfd) fail_errno("open folder", (root_ / dir).string(), errno);
      DIR* d = ::fdopendir(dfd.get());
      if (!d) fail_errno("read folder", (root_ / dir).string(), errno);
      const int fd = dfd.release();
      struct Closer {
        DIR* d;
        ~Closer() { ::closedir(d); }
      } closer{d};
      errno = 0;
      while (dirent* de = ::readdir(d)) {
        const std::string name = de->d_name;
        if (name == "." || name == "..") continue;
        Found f;
        f.raw = dir.empty() ? name : dir + "/" + name;
        if (::fstatat(fd, name.c_str(), &f.st, AT_SYMLINK_NOFOLLOW) != 0)
          fail_errno("stat", (root_ / f.raw).string(), errno);
        f.target = p.real.empty() ? name : p.real + "/" + name;
        if (S_ISLNK(f.st.st_mode)) resolve_link(f, p);
        if (S_ISDIR(f.st.st_mode)) {
          if (depth + 1 > kMaxDepth)
            fail(ErrorKind::invalid, (root_ / f.raw).string(), "folders at most " + std::to_string(kMaxDepth) + " deep",
                 "deeper ones", "give a folder further down");
          Pending next{f.raw, f.target, depth + 1, p.above};
          next.above.push_back(p.real);
          pending.push_back(std::move(next));
        }
        found.push_back(std::move(f));
        errno = 0;
      }
      if (errno != 0) fail_errno("read folder", (root_ / dir).string(), errno);
    }
    publish(found, options);
  }

  // The files and folders walked, as entries sorted by name.
  void publish(std::vector<Found>& found, const ArchiveOptions& options) {
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.raw < b.raw; });
    NameDecoder decoder(options.name_encoding);
    entries_.reserve(found.size());
    for (Found& f : found) {
      ZipEntry e;
      const bool dir = S_ISDIR(f.st.st_mode);
      e.raw_name = dir ? f.raw + "/" : f.raw;
      e.name_is_utf8 = decoder.decode(e.raw_name, false, e.name);
      e.has_crc32 = false;
      e.is_dir = dir;
      if (S_ISREG(f.st.st_mode)) e.size = e.compressed_size = static_cast<std::uint64_t>(f.st.st_size);
      if (f.link && !S_ISREG(f.st.st_mode) && !dir) e.is_symlink = true;
      e.link_target = f.link_target;
      if (S_ISFIFO(f.st.st_mode)) e.special = SpecialMember::fifo;
      if (S_ISCHR(f.st.st_mode) || S_ISBLK(f.st.st_mode)) e.special = SpecialMember::device;
      if (S_ISSOCK(f.st.st_mode)) e.special = SpecialMember::other;
      entries_.push_back(std::move(e));
      target_.push_back(std::move(f.target));
    }
    by_name_.build(entries_);
  }

  // Whether folder `outer` (below the root, "" for the root) is `inner` or holds it.
  static bool holds(const std::string& outer, const std::string& inner) {
    return outer.empty() || inner == outer ||
           (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 && inner[outer.size()] == '/');
  }

  // A link stays a link entry (link_target saying where it leads) unless it leads to a regular
  // file inside the folder, then it is that file (its stat and its path below the root), or to a
  // folder inside it that holds neither the link nor a folder walked on the way (walked as it).
  void resolve_link(Found& f, const Pending& in) {
    f.link = true;
    f.link_target = LinkTarget::dangling;
    const fs::path full = root_ / f.target;
    char* real = ::realpath(full.c_str(), nullptr);
    if (!real) return;  // dangling
    const std::string target = real;
    std::free(real);
    struct stat st {};
    if (::stat(target.c_str(), &st) != 0) return;
    const bool inside = target == real_root_ ||
                        (target.size() > real_root_.size() && target.compare(0, real_root_.size(), real_root_) == 0 &&
                         (real_root_ == "/" || target[real_root_.size()] == '/'));
    if (!inside) {
      f.link_target = S_ISDIR(st.st_mode) ? LinkTarget::folder_outside : LinkTarget::file_outside;
      return;
    }
    const std::string rel = target == real_root_ ? "" : target.substr(real_root_ == "/" ? 1 : real_root_.size() + 1);
    if (S_ISDIR(st.st_mode)) {
      const bool cycle = holds(rel, in.real) || std::any_of(in.above.begin(), in.above.end(),
                                                            [&](const std::string& d) { return holds(rel, d); });
      if (cycle) {
        f.link_target = LinkTarget::folder_cycle;
        return;
      }
    } else if (!S_ISREG(st.st_mode)) {
      f.link_target = LinkTarget::unknown;  // a FIFO, a device: listed as a link, never opened
      return;
    }
    f.link_target = LinkTarget::unknown;
    f.st = st;
    f.target = rel;
  }

  fs::path root_;
  std::string real_root_;
  UniqueFd root_fd_;
  FolderSource source_;
  std::string display_;
  std::vector<ZipEntry> entries_;
  std::vector<std::string> target_;  // per entry: its path below the root, links resolved
  NameTable by_name_;
};

}  // namespace

std::unique_ptr<Archive> open_folder_archive(const fs::path& root, const ArchiveOptions& options) {
  return std::make_unique<FolderArchive>(root, options);
}

std::optional<fs::path> folder_file(const Archive& archive, std::size_t i) {
  auto* f = dynamic_cast<const FolderArchive*>(&archive);
  if (!f || i >= f->entries().size() || f->entries()[i].is_dir) return std::nullopt;
  return f->file(i);
}

}  // namespace frugal
