// Files: descriptors, whole-file reads, crash-safe writes.
//
// Crash-safe write protocol (leveldb's): write "<path>.frugal-tmp-<random>" in the same folder,
// fsync it, rename it over <path>, fsync the folder. A reader sees the old file or the new one,
// never a torn one.
//
// A temporary carries its owner: the writer holds flock(LOCK_EX) on it from its creation until it
// is renamed or removed (create_owned_temp). The kernel drops the lock when the owner dies, however
// it dies, so a temporary whose lock can be taken is provably abandoned (a reused pid cannot make
// a dead writer look alive); only such a one is removed (remove_if_abandoned), by `frugal clean`
// or by a run in its own folder.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace frugal {

class Env;  // env.h: the seam every write goes through

inline constexpr std::string_view kTempMarker = ".frugal-tmp-";

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Opens for reading; throws Error naming the path on failure.
UniqueFd open_read(const std::filesystem::path& path);

// Files frugal reads by name (its own files in run folders and workspaces, checkpoints, configs,
// manifests) must be regular files: a FIFO there would block the open or the read forever, and a
// device (a link to /dev/zero) would be read without end. open_regular() opens without blocking
// (O_NONBLOCK, cleared again once the file is known to be regular) and throws Error(invalid)
// naming the path and what it found for anything else. Links::refuse also refuses a symbolic link
// as the last component: for files frugal finds in its own folders, which it never follows out.
enum class Links { follow, refuse };
UniqueFd open_regular(const std::filesystem::path& path, Links links = Links::follow);

// The kind of thing at `path` in words for messages ("a FIFO", "a symbolic link", "a folder",
// "a character device", ...; lstat, so a link is named as such); "nothing" when absent.
std::string file_kind(const std::filesystem::path& path);

// An exclusive advisory lock (flock) on a file or a folder, held while the object lives, so that
// two frugal processes never write the same thing at once (a notebook cell run twice: two joins of
// one set, two trainings of one run folder, two extracts into one folder, a clean beside a
// training). The kernel drops it when the holder dies, however it dies, so a lock never outlives
// its process and there is nothing to clean up. Within one process a second lock of the same path
// conflicts too (flock is per open file).
class FileLock {
 public:
  // The lock, or nullopt when another process holds it. Throws Error for a path that cannot be
  // opened (missing, a FIFO, no permission); a file system without flock (some network mounts)
  // is Error(unsupported) naming the path.
  static std::optional<FileLock> try_lock(const std::filesystem::path& path);
  // The lock, or Error(io) (exit 1) when another process holds it: "<path>: in use by another
  // frugal process (pid N: its command line); `doing` (e.g. "train into this run folder") waits
  // for it to end: let it finish or stop it, then run the same command again".
  static FileLock lock(const std::filesystem::path& path, const std::string& doing);
  // Who holds a lock on `path` ("pid 1234: frugal train --run runs/a ...", from /proc/locks and the
  // process's command line), or "" when nobody does or it cannot be told.
  static std::string holder(const std::filesystem::path& path);

  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;
  const std::filesystem::path& path() const { return path_; }

 private:
  FileLock(std::filesystem::path path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::filesystem::path path_;
  UniqueFd fd_;
};

// Reads exactly n bytes at offset (retrying short reads); throws Error(invalid) on EOF.
void pread_full(int fd, void* buf, std::size_t n, std::uint64_t offset, const std::string& name);

// Writes all bytes (retrying short writes); throws Error(io) naming the path, ENOSPC included.
void write_full(int fd, const void* buf, std::size_t n, const std::string& name);

std::string read_file(const std::filesystem::path& path);

// The whole file when it holds at most max_bytes, else nullopt (read no further than that): for
// files a user did not write, whose size must not decide how much memory is used.
std::optional<std::string> read_file_at_most(const std::filesystem::path& path, std::uint64_t max_bytes);

// A file frugal finds in its own folders (a run folder's config.json, best.safetensors, ...), read
// through open_regular (no FIFO, device or, with Links::refuse, link) when it holds at most
// max_bytes, else nullopt (its size is checked before anything is read).
std::optional<std::string> read_regular_at_most(const std::filesystem::path& path, std::uint64_t max_bytes,
                                                Links links = Links::refuse);

// A unique temporary name beside `path` carrying kTempMarker. Its file name fits in NAME_MAX
// (255 bytes) even when `path`'s own name nearly fills it: the name is then cut (at a UTF-8
// character boundary) before the marker, so a file whose name the file system takes can always
// be written crash-safely.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

bool is_temp_path(const std::filesystem::path& path);

// Creates `temp` exclusively, mode 0644, with flock(LOCK_EX) already held on the returned fd (the
// lock lives as long as any duplicate of that fd). Where the file system has O_TMPFILE the file
// is created unnamed, locked, then linked under its name, so it is never visible unlocked.
// Returns -1 with errno set on failure (EEXIST, ENOSPC, ...).
int create_owned_temp(const std::filesystem::path& temp);

// Whether the temporary `temp` is abandoned: its owner's lock can be taken (the writer is gone)
// and it has not been modified for `quiet` (for writers that do not lock, such as other programs
// or older frugal versions; 0 trusts the lock alone). With `remove`, an abandoned one is unlinked
// while the sweeper holds its lock, and `abandoned` means it was removed. A symbolic link or
// anything but a regular file is `absent`.
enum class TempState { abandoned, owned, recent, absent };
TempState sweep_temp(const std::filesystem::path& temp, std::chrono::seconds quiet, bool remove);
inline bool remove_if_abandoned(const std::filesystem::path& temp,
                                std::chrono::seconds quiet = std::chrono::seconds(0)) {
  return sweep_temp(temp, quiet, /*remove=*/true) == TempState::abandoned;
}

void fsync_fd(int fd, const std::string& name);
void fsync_dir(const std::filesystem::path& dir);

// Crash-safe replacement of `path` with `data` (protocol above), through Env::real() or `env`.
// Larger outputs written in pieces use env.h's AtomicWrite / write_atomic, the one implementation
// of the protocol.
void write_file_atomic(const std::filesystem::path& path, std::string_view data);
void write_file_atomic(Env& env, const std::filesystem::path& path, std::string_view data);

// Names that come from data (a manifest's "name", a delta's base, an archive entry, a config value)
// become paths on disk only through these two functions.
//
// normalize_relative: the lexical normal form of a relative name: "." and empty components
// dropped ("d/./f", "d//f" and "d/f/" are all "d/f"). Returns "" when the name is empty, absolute,
// contains "..", a NUL byte or a backslash, or normalises to nothing: such a name never names a
// file inside a folder. Names that normalise to the same string are the same file.
std::string normalize_relative(std::string_view rel);

// root / normalize_relative(rel), after checking that no component of it below root that already
// exists is a symbolic link (so nothing is followed out of the folder). Throws Error(invalid)
// "<where>: expected a path inside <root>, found <rel>; ..." otherwise.
std::filesystem::path confine_path(const std::filesystem::path& root, std::string_view rel, const std::string& where);

// Free bytes for an unprivileged user on the file system holding `path`.
std::uint64_t free_space(const std::filesystem::path& path);

}  // namespace frugal
