// Streaming decompression of a compressed tar into the cache folder: memory is two 1 MiB buffers and
// the decoder's state (a window or dictionary of at most kMaxDecoderWindow), whatever the file's
// size or says; disk is what the budget allows (decompress.h).
#include "frugal/archive/decompress.h"

#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>

#include "archive/cache_key.h"
#include "archive/decompress_stream.h"
#include "archive/index_cache.h"
#include "frugal/util/env.h"
#include "frugal/util/error.h"
#include "frugal/archive/file_type.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kBuf = std::size_t{1} << 20;

// One decoder over the whole input, concatenated streams included. feed() turns input into output
// through `emit`; finish() throws when the input ended inside a stream.
class Decoder {
 public:
  virtual ~Decoder() = default;
  // Consumes all of `in`; calls emit for each piece of output.
  virtual void feed(std::span<const std::uint8_t> in,
                    const std::function<void(std::span<const std::uint8_t>)>& emit) = 0;
  virtual bool complete() const = 0;
};

[[noreturn]] void corrupt(const std::string& where, const std::string& what) {
  fail(ErrorKind::invalid, where, "a complete compressed stream", what,
       "the file is damaged or truncated; copy it again");
}

class GzipDecoder final : public Decoder {
 public:
  explicit GzipDecoder(std::string where) : where_(std::move(where)), out_(kBuf) {
    if (inflateInit2(&z_, 16 + 15) != Z_OK) fail(ErrorKind::io, "zlib", "an inflate stream", "out of memory", "");
  }
  ~GzipDecoder() override { inflateEnd(&z_); }
  void feed(std::span<const std::uint8_t> in, const std::function<void(std::span<const std::uint8_t>)>& emit) override {
    z_.next_in = const_cast<Bytef*>(in.data());
    z_.avail_in = static_cast<uInt>(in.size());
    while (z_.avail_in > 0) {
      if (ended_) {
        // After a member: another member, or zeros some tools pad with; anything else is damage.
        if (z_.next_in[0] == 0) {
          for (uInt i = 0; i < z_.avail_in; ++i)
            if (z_.next_in[i] != 0) corrupt(where_, "bytes after the end of the gzip data");
          return;
        }
        if (inflateReset(&z_) != Z_OK) corrupt(where_, "a gzip member that cannot start");
        ended_ = false;
      }
      z_.next_out = out_.data();
      z_.avail_out = static_cast<uInt>(out_.size());
      const uInt before = z_.avail_in;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if ((rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) ||
          (rc == Z_BUF_ERROR && z_.avail_in == before && z_.avail_out == out_.size()))
        corrupt(where_, "corrupt gzip data");
      emit(std::span<const std::uint8_t>(out_.data(), out_.size() - z_.avail_out));
      if (rc == Z_STREAM_END) ended_ = true;
    }
  }
  bool complete() const override { return ended_; }

 private:
  std::string where_;
  z_stream z_{};
  std::vector<std::uint8_t> out_;
  bool ended_ = false;
};

class ZstdDecoder final : public Decoder {
 public:
  explicit ZstdDecoder(std::string where) : where_(std::move(where)), d_(ZSTD_createDStream()), out_(kBuf) {
    if (!d_) fail(ErrorKind::io, "zstd", "a decompression stream", "out of memory", "");
    // A frame may ask for a window of up to 2 GiB (zstd --long=31); zstd's own default limit is 128 MiB.
    ZSTD_DCtx_setParameter(d_, ZSTD_d_windowLogMax, kZstdWindowLogMax);
  }
  ~ZstdDecoder() override { ZSTD_freeDStream(d_); }
  void feed(std::span<const std::uint8_t> in, const std::function<void(std::span<const std::uint8_t>)>& emit) override {
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{out_.data(), out_.size(), 0};
      last_ = ZSTD_decompressStream(d_, &ob, &ib);
      if (ZSTD_getErrorCode(last_) == ZSTD_error_frameParameter_windowTooLarge)
        fail(ErrorKind::invalid, where_,
             "zstd frames whose window is at most " + format_size(kMaxDecoderWindow) + " (window log 31)",
             "a frame that asks for a larger one (more memory than frugal gives a decoder)",
             "recompress it with a smaller window, or decompress it yourself (zstd -d) and give the .tar");
      if (ZSTD_isError(last_)) corrupt(where_, std::string("corrupt zstd data (") + ZSTD_getErrorName(last_) + ")");
      emit(std::span<const std::uint8_t>(out_.data(), ob.pos));
    }
  }
  bool complete() const override { return last_ == 0; }

 private:
  std::string where_;
  ZSTD_DStream* d_;
  std::vector<std::uint8_t> out_;
  std::size_t last_ = 1;
};

class XzDecoder final : public Decoder {
 public:
  explicit XzDecoder(std::string where) : where_(std::move(where)), out_(kBuf) {
    // The limit holds for every stream of the file: a later one cannot ask for more than the first.
    if (lzma_stream_decoder(&s_, kXzMemLimit, LZMA_CONCATENATED) != LZMA_OK)
      fail(ErrorKind::io, "liblzma", "a decompression stream", "out of memory", "");
  }
  ~XzDecoder() override { lzma_end(&s_); }
  void feed(std::span<const std::uint8_t> in, const std::function<void(std::span<const std::uint8_t>)>& emit) override {
    run(in, LZMA_RUN, emit);
  }
  // LZMA_CONCATENATED learns that the input ended only from LZMA_FINISH.
  void finish(const std::function<void(std::span<const std::uint8_t>)>& emit) { run({}, LZMA_FINISH, emit); }
  bool complete() const override { return ended_; }

 private:
  void run(std::span<const std::uint8_t> in, lzma_action action,
           const std::function<void(std::span<const std::uint8_t>)>& emit) {
    s_.next_in = in.data();
    s_.avail_in = in.size();
    for (;;) {
      s_.next_out = out_.data();
      s_.avail_out = out_.size();
      const lzma_ret rc = lzma_code(&s_, action);
      if (rc == LZMA_MEMLIMIT_ERROR)
        fail(ErrorKind::invalid, where_,
             "xz streams whose decoder needs at most " + format_size(kXzMemLimit) +
                 " of memory (a dictionary of at most " + format_size(kMaxDecoderWindow) +
                 ", as a zstd window; xz -9 uses 64 MiB)",
             "a stream whose decoder would need " + format_size(lzma_memusage(&s_)),
             "recompress it with a smaller dictionary, or decompress it yourself (xz -dk) and give the .tar");
      if (rc != LZMA_OK && rc != LZMA_STREAM_END && rc != LZMA_BUF_ERROR) corrupt(where_, "corrupt xz data");
      emit(std::span<const std::uint8_t>(out_.data(), out_.size() - s_.avail_out));
      if (rc == LZMA_STREAM_END) ended_ = true;
      if (rc == LZMA_STREAM_END || (s_.avail_in == 0 && s_.avail_out != 0) || rc == LZMA_BUF_ERROR) return;
    }
  }
  std::string where_;
  lzma_stream s_ = LZMA_STREAM_INIT;
  std::vector<std::uint8_t> out_;
  bool ended_ = false;
};

class Bzip2Decoder final : public Decoder {
 public:
  explicit Bzip2Decoder(std::string where) : where_(std::move(where)), out_(kBuf) { start(); }
  ~Bzip2Decoder() override { BZ2_bzDecompressEnd(&s_); }
  void feed(std::span<const std::uint8_t> in, const std::function<void(std::span<const std::uint8_t>)>& emit) override {
    s_.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data()));
    s_.avail_in = static_cast<unsigned>(in.size());
    while (s_.avail_in > 0) {
      if (ended_) {  // a further stream (pbzip2 writes one per block)
        BZ2_bzDecompressEnd(&s_);
        char* next = s_.next_in;
        unsigned avail = s_.avail_in;
        start();
        s_.next_in = next;
        s_.avail_in = avail;
        ended_ = false;
      }
      s_.next_out = reinterpret_cast<char*>(out_.data());
      s_.avail_out = static_cast<unsigned>(out_.size());
      const unsigned before = s_.avail_in;
      const int rc = BZ2_bzDecompress(&s_);
      if ((rc != BZ_OK && rc != BZ_STREAM_END) || (rc == BZ_OK && s_.avail_in == before && s_.avail_out == out_.size()))
        corrupt(where_, "corrupt bzip2 data");
      emit(std::span<const std::uint8_t>(out_.data(), out_.size() - s_.avail_out));
      if (rc == BZ_STREAM_END) ended_ = true;
    }
  }
  bool complete() const override { return ended_; }

 private:
  void start() {
    s_ = bz_stream{};
    if (BZ2_bzDecompressInit(&s_, 0, 0) != BZ_OK)
      fail(ErrorKind::io, "libbz2", "a decompression stream", "out of memory", "");
  }
  std::string where_;
  bz_stream s_{};
  std::vector<std::uint8_t> out_;
  bool ended_ = false;
};

std::unique_ptr<Decoder> decoder_for(FileType type, const std::string& where) {
  switch (type) {
    case FileType::gzip:
      return std::make_unique<GzipDecoder>(where);
    case FileType::zstd:
      return std::make_unique<ZstdDecoder>(where);
    case FileType::xz:
      return std::make_unique<XzDecoder>(where);
    case FileType::bzip2:
      return std::make_unique<Bzip2Decoder>(where);
    default:
      return nullptr;
  }
}

// "photos.tar.gz" -> "photos", "x.tgz" -> "x"
std::string stem_of(const fs::path& path) {
  std::string name = path.filename().string();
  for (const char* ext : {".tgz", ".tbz2", ".tbz", ".txz", ".tzst", ".gz", ".zst", ".zstd", ".xz", ".bz2"})
    if (name.size() > std::strlen(ext) && name.ends_with(ext)) {
      name.resize(name.size() - std::strlen(ext));
      break;
    }
  if (name.size() > 4 && name.ends_with(".tar")) name.resize(name.size() - 4);
  return name.substr(0, 100);
}

// The record beside a cached tar ("<tar>.source", docs/formats.md): version 2 binds the tar to its
// source and to itself under the user's cache key (cache_key.h); version 1 records (unkeyed) are
// rebuilt without a word.
//
// Trust: a cache folder may be writable by others (a team's shared or network cache), who could
// plant a tar of other names or labels under the name frugal looks for, with a matching record.
// A cached tar is used only when the current user owns both it and its record, neither can be
// written by the group or others, and the record's HMAC-SHA256 (under a key only this user can
// read) covers the source's path, size, mtime, device and inode and the tar's size, mtime, device
// and inode, as fstat gives them now. The tar's bytes are not hashed on each use (it may be many
// GB): nobody else can write into a file this user owns with mode 0644, nor give a file of theirs
// this user's uid, and a file of this user's swapped in (another cached tar renamed over it) has
// another inode, so owner + mode + the stamps under the MAC are what make it the file decompressed.
constexpr int kRecordVersion = 2;
constexpr int kNames = 4;  // the tar's name and 3 others, for names another user's files block

struct SourceStamp {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t dev = 0, ino = 0;
};

std::int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The bytes the record's MAC covers.
std::string record_fields(const SourceStamp& src, const struct stat& tar) {
  std::string s = "frugal-decompressed";
  put_le(s, kRecordVersion, 4);
  put_le(s, ::geteuid(), 4);
  put_le(s, src.path.size(), 4);
  s += src.path;
  for (std::uint64_t v : {src.size, static_cast<std::uint64_t>(src.mtime_ns), src.dev, src.ino,
                          static_cast<std::uint64_t>(tar.st_size), static_cast<std::uint64_t>(mtime_ns_of(tar)),
                          static_cast<std::uint64_t>(tar.st_dev), static_cast<std::uint64_t>(tar.st_ino)})
    put_le(s, v);
  return s;
}

std::string hex_of(const CacheMac& mac) {
  std::string out;
  char b[3];
  for (unsigned char c : mac) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

// Why a cache file cannot be trusted: empty when it is a regular file the current user owns and
// nobody else can write.
std::string distrust(const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_uid != ::geteuid()) return "was written by another user (uid " + std::to_string(st.st_uid) + ")";
  if ((st.st_mode & 022) != 0) return std::string("can be written by others (mode ") + mode + ")";
  return {};
}

// Frees `file` of a file that cannot be trusted (another user's, or one others can write): it is
// removed, said in a note. False when it stays (a folder with the sticky bit, or not a file).
bool clear_untrusted(const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return true;
  const std::string why = distrust(st);
  if (why.empty()) return true;
  const bool removed = ::unlink(file.c_str()) == 0 || errno == ENOENT;
  note(file.string() + ": a decompressed tar cache that " + why + " is never trusted; " +
       (removed ? "removed, and the tar decompressed again" : "it cannot be removed: decompressed under another name"));
  return removed;
}

// The record's MAC for `src` and the tar `st`; nullopt without a key.
std::optional<std::string> record_mac(const std::optional<CacheKey>& key, const SourceStamp& src,
                                      const struct stat& st) {
  if (!key) return std::nullopt;
  const std::optional<CacheMac> mac = cache_mac(*key, record_fields(src, st));
  if (!mac) return std::nullopt;
  return hex_of(*mac);
}

// True when `out` is the tar decompressed from `src` (the record says so under the user's key).
bool reusable(const fs::path& out, const fs::path& sidecar, const SourceStamp& src,
              const std::optional<CacheKey>& key) {
  std::optional<std::string> text;
  struct stat st {
  }, rs{};
  try {
    text = read_regular_at_most(sidecar, 64 << 10, Links::refuse);
    const UniqueFd fd = open_regular(out, Links::refuse);
    if (::fstat(fd.get(), &st) != 0 || ::lstat(sidecar.c_str(), &rs) != 0) return false;
  } catch (const Error&) {
    return false;
  }
  if (!text || !distrust(st).empty() || !distrust(rs).empty()) return false;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  // Another version, another source, a source changed or a tar cut short: made again quietly.
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "frugal-decompressed" ||
      j.value("version", 0) != kRecordVersion || j.value("source", "") != src.path ||
      j.value("source_size", std::uint64_t{0}) != src.size ||
      j.value("source_mtime_ns", std::int64_t{0}) != src.mtime_ns ||
      j.value("source_inode", std::uint64_t{0}) != src.ino ||
      j.value("bytes", ~std::uint64_t{0}) != static_cast<std::uint64_t>(st.st_size) ||
      j.value("tar_mtime_ns", std::int64_t{0}) != mtime_ns_of(st) ||
      j.value("tar_inode", std::uint64_t{0}) != static_cast<std::uint64_t>(st.st_ino))
    return false;
  const std::optional<std::string> mac = record_mac(key, src, st);
  if (!mac) return false;
  if (j.value("mac", "").size() != mac->size() ||
      CRYPTO_memcmp(j.value("mac", "").data(), mac->data(), mac->size()) != 0) {
    note(sidecar.string() +
         ": its checksum is not one made with your cache key (damaged, made with another key, or written by "
         "someone else); the tar is not used: decompressed again");
    return false;
  }
  return true;
}

// The stat of `file` once only its owner can write it; nullopt when it is not this user's regular
// file (a file system that does not keep it, or one swapped in).
std::optional<struct stat> seal(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
  if (ok && (st.st_mode & 022) != 0) ok = ::fchmod(fd, st.st_mode & 0755) == 0 && ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!ok) return std::nullopt;
  return st;
}

// Identifies the source: a cached tar is reused only while its source is unchanged.
SourceStamp stamp_of(const fs::path& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno("stat", path.string(), errno);
  std::error_code ec;
  return {fs::absolute(path, ec).lexically_normal().string(), static_cast<std::uint64_t>(st.st_size), mtime_ns_of(st),
          static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

// "<stem>-<hash of the user id and the source's absolute path>.tar": one cached tar per source file
// and user; `n` > 0: "<...>-<n>.tar", where another user's files block the first name.
fs::path cached_tar_path(const fs::path& dir, const fs::path& path, const SourceStamp& stamp, int n = 0) {
  std::string key;
  put_le(key, ::geteuid(), 4);
  key += stamp.path;
  char hash[9];
  std::snprintf(hash, sizeof hash, "%08llx",
                static_cast<unsigned long long>(xxh3_64(key.data(), key.size()) & 0xffffffffu));
  return dir / (stem_of(path) + "-" + hash + (n > 0 ? "-" + std::to_string(n) : std::string()) + ".tar");
}

// The decompressed bytes on their way to the cached tar, through a byte budget: `max_bytes` (what is
// left of {disk_budget}) and the free space of `dir` less its reserve (decompress_reserve), measured
// at the start, every 64 MiB and before any write that would pass it. The write that would pass
// either is not made: Error(budget), and the temporary is removed (nothing kept).
class TarSink {
 public:
  TarSink(Env& env, const fs::path& out, const fs::path& source, const fs::path& dir,
          std::optional<std::uint64_t> max_bytes)
      : env_(env),
        w_(env, out),
        source_(source),
        dir_(dir),
        max_bytes_(max_bytes),
        reserve_(decompress_reserve(env.disk_size(dir))) {
    measure_free_space();
  }

  // Refuses before writing when the decompressed size is known (`how`: where it was read) and
  // would not fit.
  void expect(std::uint64_t bytes, const std::string& how) {
    if (max_bytes_ && bytes > *max_bytes_) over_budget(bytes, how);
    if (bytes > room_until_) over_free_space(bytes, how);
  }

  void append(std::span<const std::uint8_t> piece) {
    if (piece.empty()) return;
    const std::uint64_t after = written_ + piece.size();
    if (max_bytes_ && after > *max_bytes_) over_budget(after, "");
    if (after > room_until_ || written_ - checked_at_ >= kCheckEvery) {
      measure_free_space();
      if (after > room_until_) over_free_space(after, "");
    }
    w_.file().append(piece.data(), piece.size());
    written_ = after;
  }
  std::uint64_t written() const { return written_; }
  void commit() { w_.commit(); }

 private:
  static constexpr std::uint64_t kCheckEvery = std::uint64_t{64} << 20;

  void measure_free_space() {
    checked_at_ = written_;
    free_ = env_.free_space(dir_);
    room_until_ = written_ + (free_ > reserve_ ? free_ - reserve_ : 0);
  }
  // `how` empty: `need` is what decompressing needed so far.
  std::string needed(std::uint64_t need, const std::string& how) const {
    return how.empty() ? "more than that: " + format_size(need) + " needed so far (stopped after writing " +
                             format_size(written_) + ", nothing kept)"
                       : format_size(need) + " (" + how + "; nothing written)";
  }
  [[noreturn]] void over_budget(std::uint64_t need, const std::string& how) const {
    fail(ErrorKind::budget, source_.string(),
         "a decompressed tar within the " + format_size(*max_bytes_) +
             " left of {disk_budget} (it counts against the budget wherever the cache folder " + dir_.string() + " is)",
         needed(need, how),
         "raise {disk_budget} or free room in the workspace, or decompress it yourself where there is room");
  }
  [[noreturn]] void over_free_space(std::uint64_t need, const std::string& how) const {
    fail(ErrorKind::budget, source_.string(),
         "a decompressed tar that leaves the last " + format_size(reserve_) + " of the disk of " + dir_.string() +
             " free (5% of it, at most 1 GiB: decompressing never takes them)",
         needed(need, how) + "; " + format_size(free_) + " free there now",
         "free space on that disk, set FRUGAL_CACHE_DIR to a folder on a disk with room, or decompress it "
         "yourself where there is room");
  }

  Env& env_;
  AtomicWrite w_;
  const fs::path& source_;
  const fs::path& dir_;
  std::optional<std::uint64_t> max_bytes_;
  std::uint64_t reserve_;
  std::uint64_t written_ = 0, checked_at_ = 0, free_ = 0, room_until_ = 0;
};

// The size a zstd file's first frame states (a lower bound of the whole: later frames only add),
// when it states one.
std::optional<std::uint64_t> stated_size(int fd, const fs::path& path, FileType type, std::uint64_t size) {
  if (type != FileType::zstd) return std::nullopt;
  std::uint8_t head[18];  // a frame header's largest size (ZSTD_FRAMEHEADERSIZE_MAX, not public API)
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof head, size));
  pread_full(fd, head, n, 0, path.string());
  const unsigned long long stated = ZSTD_getFrameContentSize(head, n);
  if (stated == ZSTD_CONTENTSIZE_UNKNOWN || stated == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
  return stated;
}

// Runs the `size` bytes of `fd` through `decoder` into `sink`; throws when the input ends inside a stream.
void decompress_file(int fd, const fs::path& path, std::uint64_t size, Decoder& decoder, TarSink& sink) {
  auto emit = [&sink](std::span<const std::uint8_t> piece) { sink.append(piece); };
  std::vector<std::uint8_t> buf(kBuf);
  Progress progress("decompress " + path.filename().string(), size);
  for (std::uint64_t off = 0; off < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - off));
    pread_full(fd, buf.data(), n, off, path.string());
    decoder.feed(std::span<const std::uint8_t>(buf.data(), n), emit);
    off += n;
    progress.advance(n);
  }
  if (auto* xz = dynamic_cast<XzDecoder*>(&decoder)) xz->finish(emit);
  progress.finish();
  if (!decoder.complete()) corrupt(path.string(), "data that ends inside a stream");
}

// A tar made by an earlier run, reused: it too must fit in what is left of {disk_budget}.
DecompressedTar reuse(const fs::path& out, const fs::path& source, std::optional<std::uint64_t> max_bytes) {
  struct stat o {};
  ::lstat(out.c_str(), &o);
  const auto bytes = static_cast<std::uint64_t>(o.st_size);
  if (max_bytes && bytes > *max_bytes)
    fail(ErrorKind::budget, source.string(),
         "a decompressed tar within the " + format_size(*max_bytes) + " left of {disk_budget}",
         out.string() + " of " + format_size(bytes) + ", decompressed earlier (it counts against the budget)",
         "raise {disk_budget}, or decompress it yourself where there is room and give the .tar");
  return {out, bytes, true};
}

}  // namespace

DecompressedTar decompress_tar(const fs::path& path, const fs::path& dir, std::optional<std::uint64_t> max_bytes,
                               Env& env) {
  const FileTypeInfo type = file_type(path);
  if (!is_compressed_tar(type))
    fail(ErrorKind::unsupported, path.string(), "a compressed tar (.tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2)",
         describe(type), "only a compressed tar needs decompressing; give any other archive as it is");
  UniqueFd in = open_regular(path);
  const SourceStamp stamp = stamp_of(path, in.get());
  env.create_dirs(dir);

  // One decompression into `dir` at a time: ranks started together would each write the same file.
  std::optional<FileLock> lock;
  while (!(lock = FileLock::try_lock(dir))) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::optional<CacheKey> key = user_cache_key();
  fs::path out, sidecar;
  for (int n = 0; n < kNames && out.empty(); ++n) {
    const fs::path tar = cached_tar_path(dir, path, stamp, n), record = tar.string() + ".source";
    const bool tar_free = clear_untrusted(tar), record_free = clear_untrusted(record);
    if (!tar_free || !record_free) continue;
    if (reusable(tar, record, stamp, key)) return reuse(tar, path, max_bytes);
    out = tar;
    sidecar = record;
  }
  if (out.empty())
    fail(ErrorKind::io, dir.string(), "a cache folder where frugal can write the decompressed tar of " + path.string(),
         "files of other users, which cannot be removed, at all " + std::to_string(kNames) + " of its names",
         "set FRUGAL_CACHE_DIR to a folder only you can write");

  std::unique_ptr<Decoder> decoder = decoder_for(type.type, path.string());
  TarSink sink(env, out, path, dir, max_bytes);
  if (const auto stated = stated_size(in.get(), path, type.type, stamp.size))
    sink.expect(*stated, "at least that: the size its first zstd frame states");
  decompress_file(in.get(), path, stamp.size, *decoder, sink);
  sink.commit();
  // The record binds the tar as it is now (no key: none is written, and the tar is made again next time).
  const std::optional<struct stat> st = seal(out);
  const std::optional<std::string> mac = st ? record_mac(key, stamp, *st) : std::nullopt;
  if (mac) {
    const nlohmann::json j = {{"format", "frugal-decompressed"},
                              {"version", kRecordVersion},
                              {"source", stamp.path},
                              {"source_size", stamp.size},
                              {"source_mtime_ns", stamp.mtime_ns},
                              {"source_inode", stamp.ino},
                              {"bytes", sink.written()},
                              {"tar_mtime_ns", mtime_ns_of(*st)},
                              {"tar_inode", st->st_ino},
                              {"mac", *mac}};
    write_file_atomic(env, sidecar, j.dump(2) + "\n");
    seal(sidecar);
  }
  return {out, sink.written(), false};
}

DecompressedTar decompress_tar(const fs::path& path, const fs::path& dir, std::optional<std::uint64_t> max_bytes) {
  return decompress_tar(path, dir, max_bytes, Env::real());
}

std::uint64_t decompress_reserve(std::uint64_t disk_bytes) {
  return std::min<std::uint64_t>(disk_bytes / 20, std::uint64_t{1} << 30);
}

fs::path decompressed_tar_path(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  SourceStamp stamp;
  stamp.path = fs::absolute(path, ec).lexically_normal().string();
  // The first name that another user's file does not hold, as decompress_tar() picks it.
  for (int n = 0; n < kNames; ++n) {
    const fs::path tar = cached_tar_path(dir, path, stamp, n);
    struct stat st {};
    if (::lstat(tar.c_str(), &st) != 0 || (S_ISREG(st.st_mode) && st.st_uid == ::geteuid())) return tar;
  }
  return cached_tar_path(dir, path, stamp);
}

void decompress_bytes(FileType type, std::span<const std::uint8_t> in, const std::string& where,
                      const std::function<void(std::span<const std::uint8_t>)>& emit) {
  std::unique_ptr<Decoder> decoder = decoder_for(type, where);
  if (!decoder) fail(ErrorKind::unsupported, where, "gzip, zstd, xz or bzip2 data", "another type", "");
  decoder->feed(in, emit);
  if (auto* xz = dynamic_cast<XzDecoder*>(decoder.get())) xz->finish(emit);
  if (!decoder->complete()) corrupt(where, "data that ends inside a stream");
}

}  // namespace frugal
