// `frugal extract`: all checks first (unsafe names, budgets), then crash-safe writes inside DIR.
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>

#include <system_error>

#include "frugal/archive.h"
#include "frugal/checked.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/progress.h"
#include "frugal/units.h"

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
  fail(ErrorKind::invalid, archive.display_name(), "entries safe to extract",
       std::to_string(bad) + " unsafe: " + list,
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
      fs::create_directory(p);
    } else if (!fs::is_directory(st)) {
      fail(ErrorKind::invalid, entry, "a folder at " + p.string(), "a file there already",
           "the archive holds both a file and a folder of that name, or the folder is not empty; use -C");
    }
  }
}

// Crash-safe writes in batches: each file is written to a temporary name, then one syncfs() makes
// the whole batch durable, then the files are renamed into place and their folders synced. A file
// thus appears under its name only with its data on disk (the temp + fsync + rename protocol of
// fs.h), but a batch costs one journal commit instead of one per file: per-file fsync made 5,000
// small files take a minute.
class BatchWriter {
 public:
  explicit BatchWriter(const fs::path& root) : root_fd_(open_read(root)) {}
  ~BatchWriter() {
    for (const auto& p : pending_) ::unlink(p.temp.c_str());  // before their locks go with the fds
  }

  // Writes entry i to a temporary beside `target`; it is renamed at the next commit().
  std::uint64_t add(const Archive& archive, std::size_t i, const fs::path& target) {
    const fs::path temp = temp_path_for(target);
    // Locked (fs.h) and kept open until renamed: `clean` never takes a pending file for abandoned.
    UniqueFd fd(create_owned_temp(temp));
    if (!fd) fail_errno("create", temp.string(), errno);
    std::uint64_t n = 0;
    try {
      archive.read_to(i, [&](std::span<const std::uint8_t> piece) {
        write_full(fd.get(), piece.data(), piece.size(), temp.string());
        n += piece.size();
      });
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    pending_.push_back({temp, target, std::move(fd)});
    bytes_ += n;
    // 256 open files per batch stays well inside the usual limit of 1,024 descriptors.
    if (pending_.size() >= 256 || bytes_ >= (std::uint64_t{256} << 20)) commit();
    return n;
  }

  void commit() {
    if (pending_.empty()) return;
    if (::syncfs(root_fd_.get()) != 0) fail_errno("syncfs", pending_.front().target.string(), errno);
    std::set<fs::path> dirs;
    for (auto& p : pending_) {
      if (::rename(p.temp.c_str(), p.target.c_str()) != 0) fail_errno("rename", p.target.string(), errno);
      if (::close(p.fd.release()) != 0) fail_errno("close", p.target.string(), errno);
      dirs.insert(p.target.parent_path());
    }
    pending_.clear();
    bytes_ = 0;
    for (const auto& d : dirs) fsync_dir(d);
  }

 private:
  struct Pending {
    fs::path temp, target;
    UniqueFd fd;  // holds the temporary's lock until the rename
  };
  UniqueFd root_fd_;
  std::vector<Pending> pending_;
  std::uint64_t bytes_ = 0;
};

}  // namespace

ExtractResult extract(const Archive& archive, const ExtractOptions& options) {
  const std::vector<std::size_t> selected = select_entries(archive, options);
  refuse_unsafe(archive, selected);
  check_budgets(archive, selected, options);
  std::error_code made;
  fs::create_directories(options.dir, made);
  if (made) fail_errno("create folder", options.dir.string(), made.value());
  const fs::path root = fs::canonical(options.dir);
  ExtractResult result;
  std::uint64_t total = 0;
  for (std::size_t i : selected) total += archive.entries()[i].size;
  Progress progress("extract", total);
  BatchWriter writer(root);
  for (std::size_t i : selected) {
    const ZipEntry& e = archive.entries()[i];
    const std::string where = archive.display_name() + ":" + e.name;
    if (e.is_dir && normalize_relative(e.name).empty()) continue;  // "./": DIR itself
    const fs::path target = confine_path(root, e.name, where);
    const fs::path rel = target.lexically_relative(root);
    if (e.is_dir) {
      make_dirs_inside(root, rel, where);
      ++result.dirs;
      continue;
    }
    make_dirs_inside(root, rel.parent_path(), where);
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(target, ec)) || fs::is_symlink(fs::symlink_status(target, ec)))
      fail(ErrorKind::invalid, where, "a file path in " + root.string(), "a folder or symlink there already",
           "remove it or extract into an empty folder with -C");
    // A temporary becomes `target` only after read_to has checked size and CRC-32 (else it throws
    // and the writer removes every pending temporary).
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
  return result;
}

}  // namespace frugal
