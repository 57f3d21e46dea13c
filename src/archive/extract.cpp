// `frugal extract`: all checks first (unsafe or too long names, files already there, budgets),
// then writes inside DIR that a kill leaves no trace of and that never replace a file unasked.
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <map>
#include <set>

#include <system_error>

#include "archive/leftovers.h"
#include "archive/no_clobber.h"
#include "frugal/archive/archive.h"
#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

bool glob_match(std::string_view pattern, std::string_view name) {
  const std::string p(pattern), n(name);
  return ::fnmatch(p.c_str(), n.c_str(), 0) == 0;
}

namespace {

std::vector<std::size_t> select_entries(const Archive& archive, const ExtractOptions& o) {
  std::vector<std::size_t> out;
  std::uint64_t files = 0;
  const auto& entries = archive.entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    bool match = o.patterns.empty();
    for (const auto& p : o.patterns) match = match || glob_match(p, e.name);
    if (!match) continue;
    if (!e.is_dir) {
      if (o.limit && files >= *o.limit) break;
      ++files;
    }
    out.push_back(i);
  }
  return out;
}

void refuse_unsafe(const Archive& archive, const std::vector<std::size_t>& selected) {
  std::string list;
  std::size_t bad = 0;
  for (std::size_t i : selected) {
    const ZipEntry& e = archive.entries()[i];
    std::string p = entry_problem(archive, i);
    if (p.empty()) continue;
    if (++bad <= 10) list += (list.empty() ? "" : ", ") + ("'" + e.name + "' (" + p + ")");
  }
  if (bad == 0) return;
  if (bad > 10) list += ", and " + std::to_string(bad - 10) + " more";
  fail(ErrorKind::invalid, archive.display_name(), "entries safe to extract", std::to_string(bad) + " unsafe: " + list,
       "nothing was written; run 'frugal verify' for the full list, or extract other entries by pattern");
}

fs::path nearest_existing(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p);
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  return p;
}

// What extraction costs on disk: the file system allocates whole blocks, so 10,000 files of 10
// bytes take 40 MB on a 4 KiB-block file system, not 100 KB. Counted per file (its size rounded up
// to the block), per folder (its directory entries: 8 bytes plus the name, rounded to 4, as ext4
// stores them, in whole blocks, at least one for a folder created here). Sums are checked: declared
// sizes come from the archive and must not wrap around below a budget.
struct DiskCost {
  std::uint64_t declared = 0;   // bytes the selected entries declare
  std::uint64_t allocated = 0;  // bytes of blocks the file system will allocate for them
  std::uint64_t block = 0;
};

DiskCost disk_cost(const Archive& archive, const std::vector<std::size_t>& selected, std::uint64_t block) {
  const std::string where = archive.display_name();
  DiskCost c;
  c.block = block;
  auto in_blocks = [&](std::uint64_t bytes) {
    return checked_mul(bytes / block + (bytes % block != 0), block, where, "the disk space to extract");
  };
  std::set<std::string> paths, folders;  // normal forms of every file and folder the selection makes
  for (std::size_t i : selected) {
    const ZipEntry& e = archive.entries()[i];
    const std::string norm = normalize_relative(e.name);
    if (e.is_dir && !norm.empty()) folders.insert(norm);
    for (std::size_t slash = norm.find('/'); slash != std::string::npos; slash = norm.find('/', slash + 1))
      folders.insert(norm.substr(0, slash));
    if (!norm.empty()) paths.insert(norm);
    if (e.is_dir) continue;
    c.declared = checked_add(c.declared, e.size, where, "the sum of the selected entries' sizes");
    c.allocated = checked_add(c.allocated, in_blocks(e.size), where, "the disk space to extract");
  }
  paths.insert(folders.begin(), folders.end());
  std::map<std::string, std::uint64_t> dirent_bytes;  // folder ("" for DIR itself) -> its entries
  for (const std::string& f : folders) dirent_bytes.try_emplace(f, 0);
  for (const std::string& p : paths) {
    const std::size_t slash = p.rfind('/');
    const std::uint64_t name_len = slash == std::string::npos ? p.size() : p.size() - slash - 1;
    dirent_bytes[slash == std::string::npos ? std::string() : p.substr(0, slash)] += (8 + name_len + 3) / 4 * 4;
  }
  for (const auto& [dir, bytes] : dirent_bytes) {
    // A folder made here costs at least one block; DIR itself may exist already and only grows.
    const std::uint64_t cost = dir.empty() ? in_blocks(bytes) : std::max(in_blocks(bytes), block);
    c.allocated = checked_add(c.allocated, cost, where, "the disk space to extract");
  }
  return c;
}

std::uint64_t block_size(const fs::path& target) {
  struct statvfs st {};
  if (::statvfs(target.c_str(), &st) != 0) fail_errno("statvfs", target.string(), errno);
  return st.f_frsize > 0 ? st.f_frsize : (st.f_bsize > 0 ? st.f_bsize : 4096);
}

void check_budgets(const Archive& archive, const std::vector<std::size_t>& selected, const ExtractOptions& o) {
  const fs::path target = nearest_existing(o.dir);
  const DiskCost cost = disk_cost(archive, selected, block_size(target));
  const std::string where = archive.display_name();
  if (o.max_bytes && cost.declared > *o.max_bytes)
    fail(ErrorKind::budget, where, "at most " + format_size(*o.max_bytes) + " to extract ({max_bytes})",
         format_size(cost.declared) + " declared by the selected entries",
         "nothing was written; raise {max_bytes}, or select fewer entries (patterns, {limit})");
  const std::string on_disk = format_size(cost.allocated) + " on disk (" + format_size(cost.declared) +
                              " declared, in blocks of " + format_size(cost.block) + ")";
  if (o.disk_budget && cost.allocated > *o.disk_budget)
    fail(ErrorKind::budget, where, "at most " + format_size(*o.disk_budget) + " of disk ({disk_budget})",
         on_disk + " for the selected entries",
         "nothing was written; raise {disk_budget}, or select fewer entries (patterns, {limit})");
  const std::uint64_t free = free_space(target);
  if (cost.allocated > free)
    fail(ErrorKind::budget, o.dir.string(), on_disk + " of free space", format_size(free) + " free",
         "nothing was written; free some space or extract elsewhere with -C");
}

// Names the file system would refuse, found before anything is created (a name that fails half
// way leaves the folders made before it): each component at most the folder's NAME_MAX, the whole
// path under PATH_MAX. Temporaries need no more room: they are unnamed, or cut to fit (fs.h).
void refuse_too_long(const Archive& archive, const std::vector<std::size_t>& selected, const fs::path& dir) {
  const fs::path base = nearest_existing(dir);
  const long name_max_conf = ::pathconf(base.c_str(), _PC_NAME_MAX);
  const long path_max_conf = ::pathconf(base.c_str(), _PC_PATH_MAX);
  const std::size_t name_max = name_max_conf > 0 ? static_cast<std::size_t>(name_max_conf) : 255;
  const std::size_t path_max = path_max_conf > 0 ? static_cast<std::size_t>(path_max_conf) : PATH_MAX;
  const std::size_t dir_length = fs::absolute(dir).lexically_normal().string().size();
  std::string list;
  std::size_t bad = 0;
  for (std::size_t i : selected) {
    const ZipEntry& e = archive.entries()[i];
    const std::string norm = normalize_relative(e.name);
    std::string problem;
    if (dir_length + 1 + norm.size() >= path_max) {
      problem = "a path of " + std::to_string(dir_length + 1 + norm.size()) + " bytes";
    } else {
      for (std::size_t start = 0; start < norm.size();) {
        std::size_t end = norm.find('/', start);
        if (end == std::string::npos) end = norm.size();
        if (end - start > name_max) {
          problem = "a name of " + std::to_string(end - start) + " bytes";
          break;
        }
        start = end + 1;
      }
    }
    if (problem.empty()) continue;
    const std::string shown = e.name.size() > 60 ? e.name.substr(0, 60) + "..." : e.name;
    if (++bad <= 10) list += (list.empty() ? "" : ", ") + ("'" + shown + "' (" + problem + ")");
  }
  if (bad == 0) return;
  if (bad > 10) list += ", and " + std::to_string(bad - 10) + " more";
  fail(ErrorKind::invalid, archive.display_name(),
       "entry names this file system takes (each name at most " + std::to_string(name_max) +
           " bytes, each path under " + dir.string() + " under " + std::to_string(path_max) + ")",
       std::to_string(bad) + " too long: " + list,
       "nothing was written; extract the other entries by pattern, or into a folder with a shorter path (-C)");
}

// Where entry e goes. No folder on the way may be a link (confine_path); the last component is the
// plan's to judge (a link there is a file already there, never written through).
fs::path target_of(const fs::path& root, const ZipEntry& e, const std::string& where) {
  const std::string norm = normalize_relative(e.name);
  const std::size_t slash = norm.rfind('/');
  if (e.is_dir) return confine_path(root, norm, where);
  if (slash != std::string::npos) confine_path(root, norm.substr(0, slash), where);
  return root / norm;
}

// What becomes of each selected entry, decided before anything is written.
enum class Action { write, already_there, keep, dir };

struct Plan {
  std::vector<std::pair<std::size_t, Action>> steps;  // selected entries in archive order
  std::vector<std::size_t> to_write;                  // what the budgets count (files and folders)
};

using FileId = std::pair<dev_t, ino_t>;

// The archive being read and its parts: never replaced, even with --overwrite.
std::set<FileId> archive_files(const Archive& archive) {
  std::set<FileId> ids;
  for (const auto& f : archive.source().files()) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0) ids.insert({st.st_dev, st.st_ino});
  }
  return ids;
}

// `e`'s CRC-32: the recorded one, or for entries without one (tar members, a folder's files) the
// CRC-32 of their bytes, read here.
std::uint32_t entry_crc(const Archive& archive, std::size_t i) {
  const ZipEntry& e = archive.entries()[i];
  if (e.has_crc32) return e.crc32;
  std::uint32_t crc = 0;
  archive.read_to(i, [&](std::span<const std::uint8_t> piece) { crc = crc32(crc, piece.data(), piece.size()); });
  return crc;
}

bool same_content(const fs::path& path, const Archive& archive, std::size_t i) {
  const ZipEntry& e = archive.entries()[i];
  UniqueFd fd = open_regular(path, Links::refuse);
  std::vector<char> buf(1 << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t off = 0; off < e.size;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), e.size - off));
    pread_full(fd.get(), buf.data(), n, off, path.string());
    crc = crc32(crc, buf.data(), n);
    off += n;
  }
  return crc == entry_crc(archive, i);
}

std::string listed(const std::vector<std::string>& list) {
  std::string out;
  for (std::size_t k = 0; k < list.size() && k < 10; ++k) out += (k ? ", " : "") + list[k];
  if (list.size() > 10) out += ", and " + std::to_string(list.size() - 10) + " more";
  return out;
}

// Decides, entry by entry, what extraction does at the place each goes (see plan_targets), and
// gathers what stands in the way: `conflicts_` are refused, `unreplaceable_` not even {overwrite}
// may replace.
class TargetPlanner {
 public:
  TargetPlanner(const Archive& archive, const fs::path& root, ExistingFiles existing, const std::set<FileId>& protect)
      : archive_(archive), root_(root), existing_(existing), protect_(protect) {}

  Action action_for(std::size_t i, const std::string& norm) {
    const ZipEntry& e = archive_.entries()[i];
    const fs::path target = target_of(root_, e, archive_.display_name() + ":" + e.name);
    // A file where this entry needs a folder on its way cannot be settled by replacing anything.
    if (const std::string blocked = blocked_on_the_way(norm); !blocked.empty()) return settle(e, blocked);
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) return e.is_dir ? Action::dir : Action::write;
    if (e.is_dir)
      return S_ISDIR(st.st_mode) ? Action::dir : settle(e, file_kind(target).substr(2) + " where a folder goes");
    return for_file_there(i, target, st);
  }

  // Throws, naming up to 10 of them, when anything stands in the way.
  void refuse_conflicts() const {
    if (!unreplaceable_.empty())
      fail(ErrorKind::usage, root_.string(), "places {overwrite} may replace",
           std::to_string(unreplaceable_.size()) + " it may not: " + listed(unreplaceable_),
           "nothing was written; leave these entries out by pattern, or give {skip_existing} to keep what is there");
    if (!conflicts_.empty())
      fail(ErrorKind::usage, root_.string(), "no files where the archive's entries go",
           std::to_string(conflicts_.size()) + " there already: " + listed(conflicts_),
           "nothing was written; give {skip_existing} to keep them and extract the rest, or {overwrite} to "
           "replace them (never the archive itself), or extract into another folder with -C");
  }

 private:
  // What is where a folder on the way to `norm` goes ("" when nothing is).
  std::string blocked_on_the_way(const std::string& norm) const {
    fs::path p = root_;
    const fs::path rel = fs::path(norm).parent_path();
    for (const auto& part : rel) {
      p /= part;
      struct stat st {};
      if (::lstat(p.c_str(), &st) != 0) break;
      if (!S_ISDIR(st.st_mode))
        return file_kind(p).substr(2) + " " + p.lexically_relative(root_).string() + " where a folder goes";
    }
    return "";
  }

  // A file entry whose place holds something (`st`): the same file, or what `existing_` settles.
  Action for_file_there(std::size_t i, const fs::path& target, const struct stat& st) {
    const ZipEntry& e = archive_.entries()[i];
    const bool archive_itself = S_ISREG(st.st_mode) && protect_.count({st.st_dev, st.st_ino});
    if (S_ISREG(st.st_mode) && !archive_itself && static_cast<std::uint64_t>(st.st_size) == e.size &&
        same_content(target, archive_, i))
      return Action::already_there;
    if (existing_ == ExistingFiles::skip) return Action::keep;
    if (archive_itself) return settle(e, "the archive being read");
    if (S_ISDIR(st.st_mode)) return settle(e, "a folder");
    if (existing_ == ExistingFiles::refuse)
      add_to(conflicts_, e, S_ISREG(st.st_mode) ? "a different file" : file_kind(target).substr(2));
    return Action::write;
  }

  // `what` is where `e` goes and replacing it is not allowed: kept with {skip_existing}, else noted.
  Action settle(const ZipEntry& e, const std::string& what) {
    if (existing_ == ExistingFiles::skip) return Action::keep;
    add_to(existing_ == ExistingFiles::overwrite ? unreplaceable_ : conflicts_, e, what);
    return e.is_dir ? Action::dir : Action::write;
  }

  static void add_to(std::vector<std::string>& list, const ZipEntry& e, const std::string& what) {
    list.push_back("'" + (e.name.size() > 60 ? e.name.substr(0, 60) + "..." : e.name) + "' (" + what + ")");
  }

  const Archive& archive_;
  const fs::path& root_;
  ExistingFiles existing_;
  const std::set<FileId>& protect_;
  std::vector<std::string> conflicts_, unreplaceable_;
};

// Looks at every place a selected entry goes. An entry already there (a regular file of its size
// and CRC-32: a rerun after a kill) is done; anything else there is a conflict that `existing`
// settles, or that refuses the whole extraction, naming up to 10 of them.
Plan plan_targets(const Archive& archive, const std::vector<std::size_t>& selected, const fs::path& root,
                  ExistingFiles existing, const std::set<FileId>& protect) {
  Plan plan;
  TargetPlanner planner(archive, root, existing, protect);
  for (std::size_t i : selected) {
    const std::string norm = normalize_relative(archive.entries()[i].name);
    if (norm.empty()) continue;  // "./": DIR itself
    const Action action = planner.action_for(i, norm);
    plan.steps.emplace_back(i, action);
    if (action == Action::write || action == Action::dir) plan.to_write.push_back(i);
  }
  planner.refuse_conflicts();
  return plan;
}

// Into a folder not there yet, every selected entry is written.
Plan plan_all(const Archive& archive, const std::vector<std::size_t>& selected) {
  Plan plan;
  for (std::size_t i : selected) {
    plan.steps.emplace_back(i, archive.entries()[i].is_dir ? Action::dir : Action::write);
    plan.to_write.push_back(i);
  }
  return plan;
}

// Abandoned temporaries in the folders this extraction writes to: an interrupted extract's (or an
// older frugal's) files, which would otherwise be packed and trained on as data.
std::size_t remove_leftovers(const Archive& archive, const std::vector<std::size_t>& selected, const fs::path& root) {
  std::set<fs::path> dirs{root};
  for (std::size_t i : selected) {
    const std::string norm = normalize_relative(archive.entries()[i].name);
    for (std::size_t slash = norm.find('/'); slash != std::string::npos; slash = norm.find('/', slash + 1))
      dirs.insert(root / norm.substr(0, slash));
  }
  std::size_t removed = 0;
  for (const auto& d : dirs) {
    struct stat st {};
    if (::lstat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    removed += remove_abandoned_temporaries(d, [](const std::string&) { return true; });
  }
  return removed;
}

// Creates root/rel one folder at a time. A folder already inside DIR may be a symlink leading out
// of it; it is refused before anything is created through it (create_directories would follow it).
void make_dirs_inside(const fs::path& root, const fs::path& rel, const std::string& entry) {
  fs::path p = root;
  for (const auto& part : rel) {
    if (part.empty() || part == ".") continue;
    p /= part;
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    if (fs::is_symlink(st))
      fail(ErrorKind::invalid, entry, "real folders inside " + root.string(), p.string() + " is a symlink",
           "nothing is written through symlinks; remove it or extract into an empty folder with -C");
    if (!fs::exists(st)) {
      if (!fs::create_directory(p, ec) && ec) fail_errno("create folder", p.string(), ec.value());
    } else if (!fs::is_directory(st)) {
      fail(ErrorKind::invalid, entry, "a folder at " + p.string(), "a file there already",
           "the archive holds both a file and a folder of that name, or the folder is not empty; use -C");
    }
  }
}

// Writes in batches: each file is written with no name (O_TMPFILE; a named, owned temporary where
// the file system has none), one syncfs() makes the whole batch durable, then each file gets its
// name, never over a file that is there (link/rename that fail with EEXIST) unless it may be
// replaced. A file thus appears under its name only with its data on disk, a process killed at
// any point leaves no partial or temporary file behind (named temporaries aside), and a batch
// costs one journal commit instead of one per file: per-file fsync made 5,000 small files take a
// minute.
class BatchWriter {
 public:
  BatchWriter(const fs::path& root, ExistingFiles existing, std::set<FileId> protect, ExtractResult& result)
      : root_fd_(open_read(root)),
        existing_(existing),
        protect_(std::move(protect)),
        result_(result),
        unnamed_(::access("/proc/self/fd", X_OK) == 0) {}
  ~BatchWriter() {
    for (const auto& p : pending_)
      if (!p.temp.empty()) ::unlink(p.temp.c_str());  // before their locks go with the fds
  }

  // Writes entry i; it gets its name `target` at the next commit().
  std::uint64_t add(const Archive& archive, std::size_t i, const fs::path& target) {
    Pending p{{}, target, unnamed_ ? open_unnamed(target.parent_path()) : UniqueFd(), 0};
    if (!p.fd) {
      p.temp = temp_path_for(target);
      // Locked (fs.h) and kept open until renamed: `clean` never takes a pending file for abandoned.
      p.fd = UniqueFd(create_owned_temp(p.temp));
      if (!p.fd) fail_errno("create", p.temp.string(), errno);
    }
    const std::string name = p.temp.empty() ? target.string() : p.temp.string();
    std::uint64_t n = 0;
    try {
      archive.read_to(i, [&](std::span<const std::uint8_t> piece) {
        write_full(p.fd.get(), piece.data(), piece.size(), name);
        n += piece.size();
      });
    } catch (...) {
      if (!p.temp.empty()) ::unlink(p.temp.c_str());
      throw;
    }
    p.bytes = n;
    pending_.push_back(std::move(p));
    bytes_ += n;
    // 256 open files per batch stays well inside the usual limit of 1,024 descriptors.
    if (pending_.size() >= 256 || bytes_ >= (std::uint64_t{256} << 20)) commit();
    return n;
  }

  void commit() {
    if (pending_.empty()) return;
    if (::syncfs(root_fd_.get()) != 0) fail_errno("syncfs", pending_.front().target.string(), errno);
    std::set<fs::path> dirs;
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      publish(p);
      if (::close(p.fd.release()) != 0) fail_errno("close", p.target.string(), errno);
      dirs.insert(p.target.parent_path());
      pending_.erase(pending_.begin());
    }
    bytes_ = 0;
    for (const auto& d : dirs) fsync_dir(d);
  }

 private:
  struct Pending {
    fs::path temp;  // empty for an unnamed file
    fs::path target;
    UniqueFd fd;  // the unnamed file, or the temporary's (holding its lock until the rename)
    std::uint64_t bytes;
  };

  bool publish_no_replace(Pending& p) {
    if (p.temp.empty()) return link_unnamed(p.fd.get(), p.target);
    return rename_no_replace(p.temp, p.target);
  }

  void publish(Pending& p) {
    if (publish_no_replace(p)) return;
    // Something is there: planned for with {overwrite}, or it appeared since the plan was made.
    struct stat st {};
    const bool there = ::lstat(p.target.c_str(), &st) == 0;
    if (existing_ == ExistingFiles::skip) {
      ++result_.kept;
      --result_.files;
      result_.bytes -= p.bytes;
      if (!p.temp.empty()) ::unlink(p.temp.c_str());
      return;
    }
    if (existing_ == ExistingFiles::refuse ||
        (there && (S_ISDIR(st.st_mode) || protect_.count({st.st_dev, st.st_ino}))))
      fail(ErrorKind::usage, p.target.string(), "no file there (there was none when extraction began)",
           there ? file_kind(p.target) + " that appeared meanwhile" : "one that appeared meanwhile",
           "it was kept; the files before it are extracted; run the same command again to extract the rest, "
           "with {skip_existing} or {overwrite} to settle it");
    if (p.temp.empty()) {
      p.temp = temp_path_for(p.target);
      if (!link_unnamed(p.fd.get(), p.temp)) fail_errno("create", p.temp.string(), EEXIST);
    }
    if (::rename(p.temp.c_str(), p.target.c_str()) != 0) fail_errno("rename", p.target.string(), errno);
    p.temp.clear();
    ++result_.replaced;
  }

  UniqueFd root_fd_;
  ExistingFiles existing_;
  std::set<FileId> protect_;
  ExtractResult& result_;
  bool unnamed_;
  std::vector<Pending> pending_;
  std::uint64_t bytes_ = 0;
};

// Writes what `plan` says into `root` (locked), counting it in `result`.
void carry_out(const Archive& archive, const Plan& plan, const fs::path& root, ExistingFiles existing,
               const std::set<FileId>& protect, ExtractResult& result) {
  std::uint64_t total = 0;
  for (std::size_t i : plan.to_write) total += archive.entries()[i].size;
  Progress progress("extract", total);
  BatchWriter writer(root, existing, protect, result);
  for (const auto& [i, action] : plan.steps) {
    const ZipEntry& e = archive.entries()[i];
    if (action == Action::already_there) {
      ++result.already_there;
      continue;
    }
    if (action == Action::keep) {
      ++result.kept;
      continue;
    }
    const std::string where = archive.display_name() + ":" + e.name;
    if (normalize_relative(e.name).empty()) continue;  // "./": DIR itself
    const fs::path target = target_of(root, e, where);
    const fs::path rel = target.lexically_relative(root);
    if (action == Action::dir) {
      make_dirs_inside(root, rel, where);
      ++result.dirs;
      continue;
    }
    make_dirs_inside(root, rel.parent_path(), where);
    // A file gets its name only after read_to has checked size and CRC-32 (else it throws and the
    // pending files of the batch are committed, the bad one never named).
    try {
      result.bytes += writer.add(archive, i, target);
    } catch (const Error&) {
      writer.commit();  // the good files before this one are kept, as if written one by one
      throw;
    }
    ++result.files;
    progress.advance(e.size);
  }
  writer.commit();
  progress.finish();
}

}  // namespace

ExtractResult extract(const Archive& archive, const ExtractOptions& options) {
  if (std::string(archive.format()) == "folder")
    fail(ErrorKind::usage, archive.display_name(), "an archive to extract from", "a folder (read in place)",
         "give the folder itself wherever data is read, or copy it with cp -r");
  const std::vector<std::size_t> selected = select_entries(archive, options);
  refuse_unsafe(archive, selected);
  refuse_too_long(archive, selected, options.dir);
  ExtractResult result;
  const std::set<FileId> protect = archive_files(archive);
  std::error_code ec;
  // A folder that exists is locked before it is looked at, so the plan holds while we write (a
  // second extract into it stops here), and an interrupted run's leftovers are cleared first.
  std::optional<FileLock> lock;
  fs::path root;
  Plan plan;
  if (fs::is_directory(options.dir, ec)) {
    root = fs::canonical(options.dir);
    lock = FileLock::lock(root, "extracting into this folder");
    result.temporaries_removed = remove_leftovers(archive, selected, root);
    plan = plan_targets(archive, selected, root, options.existing, protect);
  } else {
    plan = plan_all(archive, selected);
  }
  check_budgets(archive, plan.to_write, options);
  if (!lock) {
    fs::create_directories(options.dir, ec);
    if (ec) fail_errno("create folder", options.dir.string(), ec.value());
    root = fs::canonical(options.dir);
    lock = FileLock::lock(root, "extracting into this folder");
  }
  carry_out(archive, plan, root, options.existing, protect, result);
  return result;
}

}  // namespace frugal
