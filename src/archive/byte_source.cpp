// Byte sources: a file, or the parts of a split set read as one virtual file.
//
// Every part is memory-mapped once, read-only. Reads are memcpy from the mapping (or a view into it),
// so any number of threads read at once with no shared file offset and no lock.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>

#include "archive/part_set.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

// A part may shrink while it is mapped (another process truncates or rewrites it): touching a page
// past its new end raises SIGBUS, which would kill the process. A handler, installed once, finds the
// faulting address among the registered mappings, maps a page of zeros over it so that the access
// completes, and marks the part (and its source) as shrunk; reads check the mark after copying and
// fail with Error(invalid). Addresses outside every mapping get the previous disposition.
// Pread instead of mmap would avoid the signal, at a copy and a system call per read.
namespace guard {

struct Slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<std::atomic<bool>*> part{nullptr}, source{nullptr};
};
constexpr std::size_t kSlots = 16384;  // parts mapped at once, over all open archives
Slot slots[kSlots];
struct sigaction previous {};
std::uintptr_t page_size = 4096;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : slots) {
    const std::uintptr_t b = s.begin.load(std::memory_order_acquire);
    if (b == 0 || addr < b || addr >= s.end.load(std::memory_order_acquire)) continue;
    // mmap is a plain system call on Linux, safe here although POSIX does not list it.
    void* page = reinterpret_cast<void*>(addr & ~(page_size - 1));
    if (::mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) break;
    if (auto* f = s.part.load(std::memory_order_acquire)) f->store(true);
    if (auto* f = s.source.load(std::memory_order_acquire)) f->store(true);
    return;
  }
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) return previous.sa_sigaction(sig, info, context);
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)
    return previous.sa_handler(sig);
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);  // delivered on return: the default action, as without this handler
}

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &previous);
  });
}

// Returns the slot registered for [data, data + size), or null when every slot is taken.
Slot* watch(const std::uint8_t* data, std::size_t size, std::atomic<bool>* part, std::atomic<bool>* source) {
  install();
  for (Slot& s : slots) {
    std::atomic<bool>* none = nullptr;
    if (!s.part.compare_exchange_strong(none, part)) continue;
    s.source.store(source, std::memory_order_release);
    s.end.store(reinterpret_cast<std::uintptr_t>(data) + size, std::memory_order_release);
    s.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
    return &s;
  }
  return nullptr;
}

void unwatch(Slot* s) {
  s->begin.store(0, std::memory_order_release);
  s->end.store(0, std::memory_order_release);
  s->source.store(nullptr, std::memory_order_release);
  s->part.store(nullptr, std::memory_order_release);
}

}  // namespace guard

struct MappedPart {
  fs::path path;
  std::uint64_t base = 0;  // offset of its first byte in the virtual file
  std::uint64_t size = 0;
  const std::uint8_t* data = nullptr;
  guard::Slot* slot = nullptr;
};

class PartsSource final : public ByteSource {
 public:
  explicit PartsSource(const PartSet& set) : shrunk_parts_(new std::atomic<bool>[set.files.size()]) {
    parts_.reserve(set.files.size());
    for (std::size_t i = 0; i < set.files.size(); ++i) shrunk_parts_[i] = false;
    try {
      for (std::size_t i = 0; i < set.files.size(); ++i) map_part(set, i);
    } catch (...) {
      unmap_all();
      throw;
    }
  }
  ~PartsSource() override { unmap_all(); }

  void check_intact() const override {
    if (!shrunk_.load(std::memory_order_relaxed)) return;
    for (std::size_t i = 0; i < parts_.size(); ++i)
      if (shrunk_parts_[i].load())
        fail(ErrorKind::invalid, parts_[i].path.string(),
             std::to_string(parts_[i].size) + " bytes, as when it was opened",
             "a file that shrank while being read (truncated or rewritten by another program)",
             "let the copy or download finish, then run the command again");
  }

  std::uint64_t size() const override { return size_; }

  void read_at(std::uint64_t offset, void* buf, std::size_t n) const override {
    check_range(offset, n);
    if (n == 0) return;
    auto* out = static_cast<std::uint8_t*>(buf);
    std::size_t i = part_of(offset);
    while (n > 0) {
      const MappedPart& p = parts_[i];
      const std::uint64_t in_part = offset - p.base;
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, p.size - in_part));
      std::memcpy(out, p.data + in_part, k);
      out += k;
      offset += k;
      n -= k;
      ++i;
    }
    check_intact();
  }

  std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset) return std::nullopt;
    if (n == 0) return std::span<const std::uint8_t>();
    const MappedPart& p = parts_[part_of(offset)];
    if (offset + n > p.base + p.size) return std::nullopt;
    return std::span<const std::uint8_t>(p.data + (offset - p.base), n);
  }

  std::vector<fs::path> files() const override {
    std::vector<fs::path> out;
    for (const auto& p : parts_) out.push_back(p.path);
    return out;
  }
  std::vector<std::uint64_t> part_sizes() const override {
    std::vector<std::uint64_t> out;
    for (const auto& p : parts_) out.push_back(p.size);
    return out;
  }

 private:
  void map_part(const PartSet& set, std::size_t i) {
    MappedPart p;
    p.path = set.files[i];
    p.base = size_;
    UniqueFd fd = open_read(p.path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail_errno("stat", p.path.string(), errno);
    p.size = static_cast<std::uint64_t>(st.st_size);
    if (i < set.expected_sizes.size() && set.expected_sizes[i] != p.size)
      fail(ErrorKind::invalid, p.path.string(),
           "the size in the manifest, " + std::to_string(set.expected_sizes[i]) + " bytes",
           std::to_string(p.size) + " bytes", "the part is truncated or replaced; run 'frugal verify' on the manifest");
    if (p.size > 0) {
      void* m = ::mmap(nullptr, p.size, PROT_READ, MAP_SHARED, fd.get(), 0);
      if (m == MAP_FAILED) fail_errno("mmap", p.path.string(), errno);
      p.data = static_cast<const std::uint8_t*>(m);
      p.slot = guard::watch(p.data, p.size, &shrunk_parts_[i], &shrunk_);
      if (!p.slot) {
        ::munmap(m, p.size);
        fail(ErrorKind::unsupported, p.path.string(),
             "at most " + std::to_string(guard::kSlots) + " parts open at once", "more",
             "read fewer or larger parts at a time");
      }
    }
    size_ += p.size;
    parts_.push_back(std::move(p));
  }

  std::size_t part_of(std::uint64_t offset) const {
    auto it = std::upper_bound(parts_.begin(), parts_.end(), offset,
                               [](std::uint64_t o, const MappedPart& p) { return o < p.base; });
    std::size_t i = static_cast<std::size_t>(it - parts_.begin()) - 1;
    while (i + 1 < parts_.size() && parts_[i].size == 0) ++i;  // skip empty parts
    return i;
  }

  void check_range(std::uint64_t offset, std::size_t n) const {
    if (offset > size_ || n > size_ - offset)
      fail(ErrorKind::invalid, parts_.empty() ? std::string("<none>") : parts_.front().path.string(),
           "bytes " + std::to_string(offset) + ".." + std::to_string(offset + n) + " inside the file",
           "a file of " + std::to_string(size_) + " bytes", "the archive is truncated; copy it again");
  }

  void unmap_all() {
    for (auto& p : parts_) {
      if (p.slot) guard::unwatch(p.slot);
      if (p.data) ::munmap(const_cast<std::uint8_t*>(p.data), p.size);
    }
    parts_.clear();
  }

  std::vector<MappedPart> parts_;
  std::uint64_t size_ = 0;
  std::unique_ptr<std::atomic<bool>[]> shrunk_parts_;  // per part: a page past its end was touched
  std::atomic<bool> shrunk_{false};                    // any of them
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string data, std::string name) : data_(std::move(data)), name_(std::move(name)) {}
  std::uint64_t size() const override { return data_.size(); }
  void read_at(std::uint64_t offset, void* buf, std::size_t n) const override {
    if (offset > data_.size() || n > data_.size() - offset)
      fail(ErrorKind::invalid, name_, "bytes " + std::to_string(offset) + ".." + std::to_string(offset + n),
           "only " + std::to_string(data_.size()) + " bytes", "the archive is truncated");
    if (n > 0) std::memcpy(buf, data_.data() + offset, n);
  }
  std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const override {
    if (offset > data_.size() || n > data_.size() - offset) return std::nullopt;
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(data_.data()) + offset, n);
  }
  std::vector<fs::path> files() const override { return {name_}; }

 private:
  std::string data_;
  std::string name_;
};

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const fs::path& path) {
  PartSet set = find_part_set(path);
  if (set.files.empty())
    fail(ErrorKind::invalid, path.string(), "at least one part", "none", "check the manifest and its folder");
  for (const auto& f : set.files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec))
      fail(ErrorKind::invalid, f.string(), "a part of " + path.filename().string(), "no such file",
           "copy every part of the set into the same folder");
  }
  return std::make_unique<PartsSource>(set);
}

std::unique_ptr<ByteSource> memory_byte_source(std::string data, std::string name) {
  return std::make_unique<MemorySource>(std::move(data), std::move(name));
}

}  // namespace frugal
