// Tar members read in place: the index (tar_index.h, cached by tar_index_cache.h) says where each
// member's bytes lie; reads are copies or views of the mapped file, as for stored zip entries.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "archive/name_encoding.h"
#include "archive/readers.h"
#include "archive/tar_index.h"
#include "archive/tar_index_cache.h"
#include "archive/zip_index.h"
#include "frugal/archive/data_source.h"
#include "frugal/archive/webdataset.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace {

// Several shards' sources read as one (what source() returns for a shard set): each shard keeps
// its own mapping; offsets run through them in order.
class ConcatSource final : public ByteSource {
 public:
  explicit ConcatSource(std::vector<const ByteSource*> parts) : parts_(std::move(parts)) {
    for (const ByteSource* p : parts_) {
      base_.push_back(size_);
      size_ += p->size();
    }
  }
  std::uint64_t size() const override { return size_; }
  void read_at(std::uint64_t offset, void* buf, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset)
      fail(ErrorKind::invalid, files().front().string(), "bytes inside the shards", "a read past their end",
           "a shard is truncated; copy it again");
    auto* out = static_cast<std::uint8_t*>(buf);
    while (n > 0) {
      const std::size_t i = part_of(offset);
      const std::uint64_t in = offset - base_[i];
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, parts_[i]->size() - in));
      parts_[i]->read_at(in, out, k);
      out += k;
      offset += k;
      n -= k;
    }
  }
  std::optional<std::span<const std::uint8_t>> view(std::uint64_t offset, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset) return std::nullopt;
    const std::size_t i = part_of(offset);
    if (offset - base_[i] + n > parts_[i]->size()) return std::nullopt;
    return parts_[i]->view(offset - base_[i], n);
  }
  std::vector<std::filesystem::path> files() const override {
    std::vector<std::filesystem::path> out;
    for (const ByteSource* p : parts_)
      for (auto& f : p->files()) out.push_back(std::move(f));
    return out;
  }
  std::vector<std::uint64_t> part_sizes() const override {
    std::vector<std::uint64_t> out;
    for (const ByteSource* p : parts_) out.push_back(p->size());
    return out;
  }
  void check_intact() const override {
    for (const ByteSource* p : parts_) p->check_intact();
  }
  std::uint64_t base_of(std::size_t shard) const { return base_[shard]; }

 private:
  std::size_t part_of(std::uint64_t offset) const {
    auto it = std::upper_bound(base_.begin(), base_.end(), offset);
    std::size_t i = static_cast<std::size_t>(it - base_.begin()) - 1;
    while (i + 1 < parts_.size() && parts_[i]->size() == 0) ++i;
    return i;
  }
  std::vector<const ByteSource*> parts_;
  std::vector<std::uint64_t> base_;
  std::uint64_t size_ = 0;
};

class TarArchive final : public Archive {
 public:
  static constexpr std::size_t kChunk = std::size_t{4} << 20;

  TarArchive(std::vector<TarShard> shards, std::string display, const char* format, const ArchiveOptions& options)
      : shards_(std::move(shards)), display_(std::move(display)), format_(format) {
    NameDecoder decoder(options.name_encoding);
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      first_entry_.push_back(entries_.size());
      std::vector<TarRecord> records = index_shard(shards_[s], options);
      if (shards_.size() == 1) entries_.reserve(records.size());  // a set grows geometrically instead
      for (const TarRecord& r : records) {
        entries_.push_back(tar_entry(r, shards_[s].prefix, decoder));
        data_offset_.push_back(r.data_offset);
        shard_of_.push_back(static_cast<std::uint32_t>(s));
      }
    }
    first_entry_.push_back(entries_.size());
    by_name_.build(entries_);
    if (shards_.size() == 1) return;
    std::vector<const ByteSource*> parts;
    for (const auto& s : shards_) parts.push_back(s.source.get());
    concat_ = std::make_unique<ConcatSource>(std::move(parts));
  }

  const char* format() const override { return format_; }
  const std::vector<ZipEntry>& entries() const override { return entries_; }
  std::optional<std::size_t> find(std::string_view name) const override {
    if (auto i = by_name_.find(entries_, name)) return *i;
    return std::nullopt;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return concat_ ? *concat_ : *shards_.front().source; }

  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    const ZipEntry& e = readable(i);
    out.resize(static_cast<std::size_t>(e.size));
    if (!out.empty()) shard_source(i).read_at(data_offset_[i], out.data(), out.size());
  }

  void read_to(std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) const override {
    const ZipEntry& e = readable(i);
    if (e.size <= kChunk) return Archive::read_to(i, sink);
    std::vector<std::uint8_t> buf(kChunk);
    for (std::uint64_t done = 0; done < e.size;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, e.size - done));
      shard_source(i).read_at(data_offset_[i] + done, buf.data(), n);
      sink(std::span<const std::uint8_t>(buf.data(), n));
      done += n;
    }
  }

  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const override {
    const ZipEntry& e = entry(i);
    if (!regular(e)) return std::nullopt;
    return shard_source(i).view(data_offset_[i], static_cast<std::size_t>(e.size));
  }

  std::optional<std::uint64_t> stored_offset(std::size_t i) const override {
    if (!regular(entry(i))) return std::nullopt;
    return data_offset_[i] + (concat_ ? concat_->base_of(shard_of_[i]) : 0);
  }

  // A WebDataset shard set, or one tar that holds .cls members (a shard given as a file): the
  // labels of its samples, grouped as webdataset groups them (webdataset.h). Made on first use.
  const EntryLabels* entry_labels() const override {
    std::call_once(labels_once_, [&] {
      const bool shards = std::string(format_) == "webdataset";
      const bool cls = std::any_of(entries_.begin(), entries_.end(), [](const ZipEntry& e) {
        return e.name.size() > 4 && e.name.ends_with(".cls") && e.name.find('/') == std::string::npos;
      });
      if (shards || cls) labels_ = webdataset_labels(*this);
    });
    return labels_ ? &*labels_ : nullptr;
  }

  TarShardLayout layout() const {
    TarShardLayout l;
    l.first_entry = first_entry_;
    for (const auto& s : shards_) {
      l.prefix.push_back(s.prefix);
      l.display.push_back(s.display);
    }
    return l;
  }

 private:
  static bool regular(const ZipEntry& e) { return !e.is_symlink && e.special == SpecialMember::none; }

  const ZipEntry& entry(std::size_t i) const {
    if (i >= entries_.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(entries_.size()), std::to_string(i),
           "");
    return entries_[i];
  }

  const ByteSource& shard_source(std::size_t i) const { return *shards_[shard_of_[i]].source; }

  // The entry, when it is a file or folder; links and special members are never read.
  const ZipEntry& readable(std::size_t i) const {
    const ZipEntry& e = entry(i);
    if (regular(e)) return e;
    std::string what = entry_problem(e);
    const auto cut = what.find(" (");
    fail(ErrorKind::unsupported, display_ + ":" + e.name, "a file member", what.substr(0, cut),
         "frugal reads only the bytes of files in a tar; extract it with tar if the member is needed");
  }

  // The records of one shard: from the cache when it holds them for these bytes, else parsed (and
  // then cached when the tar is large enough to be worth it).
  static std::vector<TarRecord> index_shard(const TarShard& shard, const ArchiveOptions& options) {
    const ByteSource& src = *shard.source;
    const std::filesystem::path dir = index_cache_dir(options);
    std::optional<TarCacheIdentity> id;
    std::filesystem::path file;
    if (!dir.empty()) id = tar_cache_identity(src, shard.base, 0, src.size());
    if (id) {
      file = tar_cache_file(dir, *id);
      if (auto cached = load_tar_cache(file, *id, src, 0)) return std::move(*cached);
    }
    std::vector<TarRecord> records = parse_tar(src, 0, src.size(), shard.display);
    if (id && records.size() >= kTarIndexCacheMin) {
      try {
        save_tar_cache(file, *id, records, 0);
      } catch (const Error& err) {
        note(shard.display + ": its index could not be cached (" + err.what() +
             "); every open reads all its headers again");
      }
    }
    return records;
  }

  std::vector<TarShard> shards_;
  std::string display_;
  const char* format_;
  std::vector<ZipEntry> entries_;
  std::vector<std::uint64_t> data_offset_;  // in the entry's shard source
  std::vector<std::uint32_t> shard_of_;
  std::vector<std::size_t> first_entry_;
  NameTable by_name_;
  std::unique_ptr<ConcatSource> concat_;
  mutable std::once_flag labels_once_;
  mutable std::optional<EntryLabels> labels_;
};

}  // namespace

std::unique_ptr<Archive> open_tar_archive(std::vector<TarShard> shards, std::string display, const char* format,
                                          const ArchiveOptions& options) {
  if (shards.empty()) fail(ErrorKind::usage, display, "at least one tar", "none", "check the pattern");
  return std::make_unique<TarArchive>(std::move(shards), std::move(display), format, options);
}

std::optional<TarShardLayout> tar_shard_layout(const Archive& archive) {
  if (auto* t = dynamic_cast<const TarArchive*>(&archive)) return t->layout();
  return std::nullopt;
}

}  // namespace frugal
