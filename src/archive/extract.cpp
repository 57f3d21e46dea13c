// `frugal extract`: all checks first (unsafe names, budgets), then crash-safe writes inside DIR.
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include <system_error>

#include "frugal/archive.h"
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
    std::string p = entry_problem(e);
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

void check_budgets(const Archive& archive, const std::vector<std::size_t>& selected, const ExtractOptions& o) {
  std::uint64_t total = 0;
  for (std::size_t i : selected) total += archive.entries()[i].size;
  const std::string where = archive.display_name();
  if (o.max_bytes && total > *o.max_bytes)
    fail(ErrorKind::budget, where, "at most " + format_size(*o.max_bytes) + " to extract (--max-bytes)",
         format_size(total) + " declared by the selected entries",
         "nothing was written; raise --max-bytes, or select fewer entries (patterns, --limit)");
  if (o.disk_budget && total > *o.disk_budget)
    fail(ErrorKind::budget, where, "at most " + format_size(*o.disk_budget) + " of disk (--disk-budget)",
         format_size(total) + " declared by the selected entries",
         "nothing was written; raise --disk-budget, or select fewer entries (patterns, --limit)");
  const fs::path target = nearest_existing(o.dir);
  const std::uint64_t free = free_space(target);
  if (total > free)
    fail(ErrorKind::budget, o.dir.string(), format_size(total) + " of free space", format_size(free) + " free",
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
    for (const auto& p : pending_) ::unlink(p.temp.c_str());
  }

  // Writes entry i to a temporary beside `target`; it is renamed at the next commit().
  std::uint64_t add(const Archive& archive, std::size_t i, const fs::path& target) {
    const fs::path temp = temp_path_for(target);
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd) fail_errno("create", temp.string(), errno);
    std::uint64_t n = 0;
    try {
      archive.read_to(i, [&](std::span<const std::uint8_t> piece) {
        write_full(fd.get(), piece.data(), piece.size(), temp.string());
        n += piece.size();
      });
      if (::close(fd.release()) != 0) fail_errno("close", temp.string(), errno);
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    pending_.push_back({temp, target});
    bytes_ += n;
    if (pending_.size() >= 1024 || bytes_ >= (std::uint64_t{256} << 20)) commit();
    return n;
  }

  void commit() {
    if (pending_.empty()) return;
    if (::syncfs(root_fd_.get()) != 0) fail_errno("syncfs", pending_.front().target.string(), errno);
    std::set<fs::path> dirs;
    for (const auto& p : pending_) {
      if (::rename(p.temp.c_str(), p.target.c_str()) != 0) fail_errno("rename", p.target.string(), errno);
      dirs.insert(p.target.parent_path());
    }
    pending_.clear();
    bytes_ = 0;
    for (const auto& d : dirs) fsync_dir(d);
  }

 private:
  struct Pending {
    fs::path temp, target;
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
  fs::create_directories(options.dir);
  const fs::path root = fs::canonical(options.dir);
  ExtractResult result;
  std::uint64_t total = 0;
  for (std::size_t i : selected) total += archive.entries()[i].size;
  Progress progress("extract", total);
  BatchWriter writer(root);
  for (std::size_t i : selected) {
    const ZipEntry& e = archive.entries()[i];
    const fs::path target = root / fs::path(e.name).relative_path();
    const std::string where = archive.display_name() + ":" + e.name;
    const fs::path rel = fs::path(e.name).relative_path();
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
