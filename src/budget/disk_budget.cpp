#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "frugal/budget/budget.h"
#include "frugal/util/checked.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/units.h"

namespace fs = std::filesystem;

namespace frugal {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

bool ends_with_nocase(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    const char c = s[s.size() - suffix.size() + i];
    if ((is_letter(c) ? static_cast<char>(c | 0x20) : c) != suffix[i]) return false;
  }
  return true;
}

// How many characters at the end of `s` satisfy `pred`.
template <class Pred>
std::size_t tail(std::string_view s, Pred pred) {
  std::size_t n = 0;
  while (n < s.size() && pred(s[s.size() - 1 - n])) ++n;
  return n;
}

// Archives, their split parts (frugal split's NAME.part0001, zip -s's .z01, plain split's .000 and
// _aa) and manifests, by name; letters in any case. Written out rather than as a regex: names come
// from the disk, and std::regex recurses per character.
bool is_data_name(std::string_view name) {
  if (ends_with_nocase(name, ".zip") || ends_with_nocase(name, ".manifest.json")) return true;
  const std::size_t digits = tail(name, is_digit);
  const std::string_view head = name.substr(0, name.size() - digits);
  if (digits == 2 && ends_with_nocase(head, ".z")) return true;
  if (digits >= 4 && ends_with_nocase(head, ".part")) return true;
  if (digits == 3 && head.ends_with('.')) return true;
  return tail(name, is_letter) >= 2 && name.size() >= 3 && name[name.size() - 3] == '_';
}

}  // namespace

const char* to_string(FileKind kind) {
  switch (kind) {
    case FileKind::data:
      return "data";
    case FileKind::checkpoint:
      return "checkpoints";
    case FileKind::temporary:
      return "temporary";
    case FileKind::partial:
      return "partial";
    case FileKind::other:
      return "other";
  }
  return "other";
}

std::uint64_t& DiskUsage::operator[](FileKind kind) {
  switch (kind) {
    case FileKind::data:
      return data;
    case FileKind::checkpoint:
      return checkpoints;
    case FileKind::temporary:
      return temporary;
    case FileKind::partial:
      return partial;
    case FileKind::other:
      break;
  }
  return other;
}

FileKind classify_file(const fs::path& path, bool in_run_folder) {
  std::string name = path.filename().string();
  if (is_temp_path(path)) return FileKind::temporary;
  if (name.ends_with(".frugal-join") || name.ends_with(".frugal-join.state")) return FileKind::partial;
  if (in_run_folder && name.ends_with(".safetensors")) return FileKind::checkpoint;
  if (is_data_name(name)) return FileKind::data;
  return FileKind::other;
}

DiskUsage measure_usage(const fs::path& workspace) {
  DiskUsage u;
  std::error_code ec;
  std::map<fs::path, bool> run_dirs;  // asked only for folders holding *.safetensors
  auto opts = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(workspace, opts, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    // A link is counted as what it is here (its own few bytes, as `du` does), never followed out.
    if (it->is_symlink(ec2)) {
      u.other += allocated_size(it->path());
      continue;
    }
    if (!it->is_regular_file(ec2)) continue;
    bool in_run = false;
    if (it->path().extension() == ".safetensors") {
      const fs::path dir = it->path().parent_path();
      auto found = run_dirs.find(dir);
      if (found == run_dirs.end()) found = run_dirs.emplace(dir, is_run_folder(dir)).first;
      in_run = found->second;
    }
    u[classify_file(it->path(), in_run)] += allocated_size(it->path());
  }
  if (ec) note("frugal: could not read all of " + workspace.string() + ": " + ec.message());
  return u;
}

std::uint64_t allocated_size(const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

std::uint64_t allocated_bytes(const fs::path& path, std::uint64_t bytes) {
  struct statvfs st {};
  std::uint64_t block = 4096;
  if (::statvfs(path.c_str(), &st) == 0 && st.f_bsize > 0) block = st.f_bsize;
  if (bytes == 0) return 0;
  return checked_mul<std::uint64_t>((bytes - 1) / block + 1, block, path.string(), "a file size in blocks");
}

namespace {

std::vector<fs::path> find_files_of_kind(const fs::path& workspace, FileKind kind) {
  std::vector<fs::path> out;
  std::error_code ec;
  auto opts = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(workspace, opts, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    if (it->is_regular_file(ec2) && !it->is_symlink(ec2) && classify_file(it->path(), false) == kind)
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<fs::path> find_temporary_files(const fs::path& workspace) {
  return find_files_of_kind(workspace, FileKind::temporary);
}

std::vector<fs::path> find_partial_files(const fs::path& workspace) {
  return find_files_of_kind(workspace, FileKind::partial);
}

DiskBudget::DiskBudget(fs::path workspace, DiskBudgetOptions options, Env& env)
    : workspace_(std::move(workspace)), options_(options), env_(env) {}

DiskBudget::~DiskBudget() { stop_watcher(); }

namespace {

// Whether `file` lies inside `dir` (links resolved, as far as they exist).
bool is_inside(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  const fs::path f = fs::weakly_canonical(file, ec);
  fs::path d = fs::weakly_canonical(dir, ec);
  if (d.has_relative_path() && d.filename().empty()) d = d.parent_path();  // "ws/" names ws
  return std::mismatch(d.begin(), d.end(), f.begin(), f.end()).first == d.end();
}

}  // namespace

std::uint64_t DiskBudget::used() const {
  std::uint64_t used = measure_usage(workspace_).total();
  for (const auto& f : options_.counted)
    if (!is_inside(f, workspace_)) used += allocated_size(f);
  return used;
}

std::uint64_t DiskBudget::available() {
  std::uint64_t room = env_.free_space(workspace_);
  if (options_.limit) {
    const std::uint64_t used = this->used();
    room = std::min(room, used >= *options_.limit ? 0 : *options_.limit - used);
  }
  known_room_ = room;
  return room;
}

bool DiskBudget::reserve(std::uint64_t bytes) {
  std::uint64_t room = known_room_.load();
  while (room >= bytes) {
    if (known_room_.compare_exchange_weak(room, room - bytes)) return true;
  }
  room = available();
  if (room < bytes) return false;
  known_room_ -= bytes;
  return true;
}

void DiskBudget::set_evictable(std::function<std::vector<fs::path>()> evictable) {
  std::lock_guard lock(mu_);
  evictable_ = std::move(evictable);
}

void DiskBudget::set_in_progress(std::function<std::vector<fs::path>()> in_progress) {
  std::lock_guard lock(mu_);
  in_progress_ = std::move(in_progress);
}

bool DiskBudget::make_room(std::uint64_t bytes) {
  if (available() >= bytes) return true;
  std::function<std::vector<fs::path>()> evictable, in_progress;
  {
    std::lock_guard lock(mu_);
    evictable = evictable_;
    in_progress = in_progress_;
  }
  std::set<fs::path> busy;
  if (in_progress)
    for (auto& p : in_progress()) busy.insert(p);
  // Only this run's folder, and only temporaries whose writer is provably gone (fs.h): another
  // run's or command's files, and partial joins, are not ours to delete.
  std::error_code ec;
  if (!options_.own_folder.empty())
    for (const auto& e : fs::directory_iterator(options_.own_folder, ec)) {
      if (!is_temp_path(e.path()) || busy.count(e.path())) continue;
      if (!remove_if_abandoned(e.path())) continue;
      note("frugal: removed abandoned temporary file " + e.path().string() + " to make room");
      if (available() >= bytes) return true;
    }
  if (evictable) {
    for (const auto& old : evictable()) {
      if (env_.remove_file(old))
        note("frugal: removed " + old.string() + " (retention no longer needs it) to make room");
      if (available() >= bytes) return true;
    }
  }
  return available() >= bytes;
}

void DiskBudget::require(std::uint64_t bytes, const std::string& what) {
  if (make_room(bytes)) return;
  std::string budget = options_.limit ? "a disk budget of " + format_size(*options_.limit) : "the free space";
  fail(ErrorKind::budget, workspace_.string(), format_size(bytes) + " of room for " + what + " within " + budget,
       format_size(available()) + " left after removing temporary files and unneeded checkpoints",
       "free space (frugal du " + workspace_.string() + ", frugal clean) or raise {disk_budget}");
}

void DiskBudget::check_once() {
  std::uint64_t room = available();
  std::uint64_t threshold = options_.warn_below;
  if (options_.limit)
    threshold = std::max<std::uint64_t>(
        threshold > *options_.limit ? 0 : threshold,
        static_cast<std::uint64_t>(static_cast<double>(*options_.limit) * options_.warn_below_fraction));
  bool low = room < threshold;
  if (low && !warned_.exchange(true))
    warn("only " + format_size(room) + " of disk left for " + workspace_.string() +
         "; checkpoints may be skipped. Free space (frugal du, frugal clean) or raise {disk_budget}");
  if (!low) warned_ = false;
}

void DiskBudget::start_watcher() {
  std::lock_guard lock(mu_);
  if (watcher_.joinable()) return;
  stop_ = false;
  watcher_ = std::thread([this] {
    std::unique_lock lk(mu_);
    while (!stop_) {
      lk.unlock();
      try {
        check_once();
      } catch (const std::exception& e) {
        note(std::string("frugal: disk watcher: ") + e.what());
      }
      lk.lock();
      cv_.wait_for(lk, options_.watch_interval, [this] { return stop_; });
    }
  });
}

void DiskBudget::stop_watcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

}  // namespace frugal
