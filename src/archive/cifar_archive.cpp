// CIFAR-10/100 as an Archive (readers.h): an entry per image named "<split>/<batch>/<row>.bmp", its
// record made into a 32x32 BMP once at open and held in memory (3126 bytes for the record's 3072 +
// 1-2), so that reading an entry is a view of its bytes, as a stored zip entry's is: the loader
// then reads CIFAR as fast as a zip of the same BMP files.
//
// Why in memory: CIFAR is small (at most 184 MB of pixels, 60000 images) and a .tar.gz has no random
// access: a compressed tar is otherwise refused unless {cache_decompressed} writes it out to disk,
// which for CIFAR would be a second copy to read back. Here the .tar.gz is decompressed once, as a
// stream, into memory; only CIFAR's own files are kept (readme.html is skipped), each at most
// kDefaultMaxFileBytes (read_limit.h) and all of them at most kMaxCifarBytes, checked against the
// size each tar header declares before anything is kept. A folder's files are read with the same caps.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>

#include "archive/cifar.h"
#include "archive/decompress_stream.h"
#include "archive/readers.h"
#include "archive/zip_index.h"
#include "frugal/archive/file_type.h"
#include "frugal/archive/read_limit.h"
#include "frugal/util/error.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

namespace {

using cifar::kMaxCifarBytes;
using cifar::Layout;

// The files of one CIFAR distribution, by name, as bytes.
struct CifarFiles {
  std::map<std::string, std::string> bytes;
  std::string where;  // "DATA:cifar-10-batches-py/", for messages naming a file
};

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A tar header's member name: its name field after a ustar prefix; a leading "./" left out.
std::string member_name(const std::string& h) {
  std::string name(h.data(), strnlen(h.data(), 100));
  if (h.compare(257, 5, "ustar") == 0 && h[345] != '\0')
    name = std::string(h.data() + 345, strnlen(h.data() + 345, 155)) + "/" + name;
  while (name.rfind("./", 0) == 0) name = name.substr(2);
  return name;
}

// A tar read as a stream (the decompressor hands its output in pieces): CIFAR's regular files are
// kept, every other member skipped; the end blocks, or the end of the stream, end it.
class TarStream {
 public:
  TarStream(std::string where, CifarFiles& out) : where_(std::move(where)), out_(out) {}

  void feed(std::span<const std::uint8_t> in) {
    while (!in.empty() && !done_) {
      if (left_ == 0 && pad_ == 0) {
        const std::size_t n = std::min(in.size(), std::size_t{512} - header_.size());
        header_.append(reinterpret_cast<const char*>(in.data()), n);
        in = in.subspan(n);
        if (header_.size() == 512) start_member();
        continue;
      }
      if (left_ > 0) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size()));
        if (into_) into_->append(reinterpret_cast<const char*>(in.data()), n);
        left_ -= n;
        in = in.subspan(n);
        continue;
      }
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(pad_, in.size()));
      pad_ -= n;
      in = in.subspan(n);
    }
  }
  void finish() const {
    if (left_ > 0 || (!header_.empty() && !done_))
      fail(ErrorKind::invalid, where_, "a whole tar", "its end in the middle of a member", "download it again");
  }
  // The name of the first member (what tells a CIFAR tar), once its header was read.
  const std::optional<std::string>& first_name() const { return first_; }

 private:
  static std::uint64_t octal(const std::string& h, std::size_t at, std::size_t n, const std::string& where) {
    std::uint64_t v = 0;
    for (std::size_t k = at; k < at + n && h[k] != '\0' && h[k] != ' '; ++k) {
      if (h[k] < '0' || h[k] > '7' || v > (UINT64_MAX >> 3))
        fail(ErrorKind::invalid, where, "a tar header's octal size", "other bytes", "download it again");
      v = v * 8 + static_cast<std::uint64_t>(h[k] - '0');
    }
    return v;
  }

  void start_member() {
    const std::string h = std::move(header_);
    header_.clear();
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; })) {
      done_ = true;  // the end blocks
      return;
    }
    const std::string name = member_name(h);
    if (!first_) first_ = name;
    left_ = octal(h, 124, 12, where_);
    pad_ = (512 - left_ % 512) % 512;
    into_ = nullptr;
    const char type = h[156];
    if ((type != '0' && type != '\0') || !cifar::is_cifar_file(base_name(name))) return;
    check_file_size(where_ + ":" + name, left_, kDefaultMaxFileBytes);
    if (kept_ + left_ > kMaxCifarBytes)
      fail(ErrorKind::invalid, where_, "CIFAR's files, at most " + format_size(kMaxCifarBytes) + " together", "more",
           "this is not a CIFAR download; give it with {cache_decompressed} to read it as a tar");
    auto [it, added] = out_.bytes.try_emplace(std::string(base_name(name)));
    if (!added)
      fail(ErrorKind::invalid, where_, "one file of each name", "two named " + it->first,
           "extract the folder you mean and give it");
    kept_ += left_;
    it->second.reserve(static_cast<std::size_t>(left_));
    into_ = &it->second;
    if (out_.where.empty()) out_.where = where_ + ":" + name.substr(0, name.size() - base_name(name).size());
  }

  std::string where_;
  CifarFiles& out_;
  std::string header_;
  std::uint64_t left_ = 0, pad_ = 0, kept_ = 0;
  std::string* into_ = nullptr;
  bool done_ = false;
  std::optional<std::string> first_;
};

// The whole of `src` as one span: its mapped view, else read into `copy`.
// CIFAR's downloads are at most 170 MB; a larger file is no CIFAR download (nor fed to zlib whole).
std::span<const std::uint8_t> whole(const ByteSource& src, std::vector<std::uint8_t>& copy, const std::string& where) {
  check_file_size(where, src.size(), kMaxCifarBytes);
  if (auto v = src.view(0, static_cast<std::size_t>(src.size()))) return *v;
  copy.resize(static_cast<std::size_t>(src.size()));
  if (!copy.empty()) src.read_at(0, copy.data(), copy.size());
  return copy;
}

struct StopPeek {};  // thrown out of the decompressor once the first header is read

void decode(const ByteSource& src, FileType type, const std::string& where,
            const std::function<void(std::span<const std::uint8_t>)>& emit) {
  std::vector<std::uint8_t> copy;
  const auto in = whole(src, copy, where);
  if (type == FileType::tar) return emit(in);
  decompress_bytes(type, in, where, emit);
}

// The batches of a CIFAR distribution, the class names and which labels are read.
struct Loaded {
  std::vector<cifar::Batch> batches;
  std::vector<std::string> split, name;  // per batch: "train"/"test" and the batch's name
  std::vector<std::string> class_names;
  std::string column;  // "labels", "fine_labels" or "coarse_labels"
  bool coarse = false;
};

std::string take(CifarFiles& f, const std::string& name) {
  auto it = f.bytes.find(name);
  if (it == f.bytes.end())
    fail(ErrorKind::invalid, f.where + name, "this file of the CIFAR distribution", "none", "download it again");
  std::string s = std::move(it->second);
  f.bytes.erase(it);
  return s;
}

std::span<const std::uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

void names_of(Loaded& l, CifarFiles& f, Layout layout) {
  const std::string which = l.coarse ? "coarse_label_names" : "fine_label_names";
  switch (layout) {
    case Layout::python10:
      l.class_names =
          cifar::parse_pickle_names(span_of(take(f, "batches.meta")), f.where + "batches.meta", "label_names");
      break;
    case Layout::python100:
      l.class_names = cifar::parse_pickle_names(span_of(take(f, "meta")), f.where + "meta", which);
      break;
    case Layout::binary10:
      l.class_names = cifar::parse_name_lines(take(f, "batches.meta.txt"));
      break;
    case Layout::binary100:
      l.class_names = cifar::parse_name_lines(take(f, which + ".txt"));
      break;
  }
}

// Batch files in order: data_batch_1 .. data_batch_N (by number), then test_batch; train, test.
std::vector<std::string> batch_files(const CifarFiles& f, bool binary) {
  std::vector<std::string> out;
  for (const auto& [name, bytes] : f.bytes)
    if (name.rfind("data_batch_", 0) == 0 &&
        (name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0) == binary)
      out.push_back(name);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(11)) < std::stoi(b.substr(11));
  });
  for (const char* n : {"test_batch", "train", "test"}) {
    const std::string name = std::string(n) + (binary ? ".bin" : "");
    if (f.bytes.count(name)) out.push_back(name);
  }
  return out;
}

Loaded load(CifarFiles f, Layout layout, const ArchiveOptions& options) {
  const bool cifar100 = layout == Layout::python100 || layout == Layout::binary100;
  const bool binary = layout == Layout::binary10 || layout == Layout::binary100;
  if (!options.label_kind.empty() && options.label_kind != "fine" && options.label_kind != "coarse")
    fail(ErrorKind::usage, "{label_kind}", "fine or coarse", "'" + options.label_kind + "'", "");
  if (!cifar100 && options.label_kind == "coarse")
    fail(ErrorKind::usage, "{label_kind}", "fine (CIFAR-10 has one kind of label)", "coarse",
         "leave {label_kind} out for CIFAR-10");
  Loaded l;
  l.coarse = options.label_kind == "coarse";
  l.column = !cifar100 ? "labels" : l.coarse ? "coarse_labels" : "fine_labels";
  names_of(l, f, layout);
  for (const std::string& file : batch_files(f, binary)) {
    const std::string where = f.where + file;
    std::string bytes = take(f, file);
    cifar::Batch b = binary ? cifar::parse_record_file(std::move(bytes), where, cifar100)
                            : cifar::parse_pickle_batch(span_of(bytes), where, cifar100);
    bytes = std::string();
    const auto& labels = l.coarse ? b.coarse : b.fine;
    for (std::size_t r = 0; r < labels.size(); ++r)
      if (labels[r] < 0 || static_cast<std::uint64_t>(labels[r]) >= l.class_names.size())
        fail(ErrorKind::invalid, where, "labels below " + std::to_string(l.class_names.size()) + " (the class names)",
             "the label " + std::to_string(labels[r]) + " of image " + std::to_string(r), "download it again");
    std::string stem = binary ? file.substr(0, file.size() - 4) : file;
    l.split.push_back(stem.rfind("data_batch_", 0) == 0 || stem == "train" ? "train" : "test");
    l.name.push_back(std::move(stem));
    l.batches.push_back(std::move(b));
  }
  if (l.batches.empty())
    fail(ErrorKind::invalid, f.where, "CIFAR batch files (data_batch_1, test_batch, train, test)", "none",
         "download it again");
  return l;
}

class CifarArchive final : public Archive {
 public:
  CifarArchive(Loaded l, std::unique_ptr<ByteSource> source, std::string display)
      : l_(std::move(l)), source_(std::move(source)), display_(std::move(display)) {
    labels_.column = l_.column;
    labels_.class_names = l_.class_names;
    for (std::size_t b = 0; b < l_.batches.size(); ++b) {
      cifar::Batch& batch = l_.batches[b];
      bmps_.emplace_back(batch.rows * cifar::kBmpBytes);
      for (std::size_t r = 0; r < batch.rows; ++r)
        cifar::bmp_of_record(reinterpret_cast<const std::uint8_t*>(batch.data.data()) + r * batch.stride + batch.offset,
                             bmps_.back().data() + r * cifar::kBmpBytes);
      std::string().swap(batch.data);  // the records are in bmps_ now
      const auto& labels = l_.coarse ? batch.coarse : batch.fine;
      for (std::size_t r = 0; r < l_.batches[b].rows; ++r) {
        char row[24];
        std::snprintf(row, sizeof row, "%05zu", r);
        ZipEntry e;
        e.name = e.raw_name = l_.split[b] + "/" + l_.name[b] + "/" + row + ".bmp";
        e.has_crc32 = false;
        e.size = e.compressed_size = cifar::kBmpBytes;
        entries_.push_back(std::move(e));
        at_.emplace_back(static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(r));
        labels_.label.emplace_back(labels[r]);
      }
    }
    by_name_.build(entries_);
  }

  const char* format() const override { return "cifar"; }
  const std::vector<ZipEntry>& entries() const override { return entries_; }
  std::optional<std::size_t> find(std::string_view name) const override {
    if (auto i = by_name_.find(entries_, name)) return *i;
    return std::nullopt;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return *source_; }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override {
    const auto v = bmp(i);
    out.assign(v.begin(), v.end());
  }
  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const override { return bmp(i); }
  const EntryLabels* entry_labels() const override { return &labels_; }

 private:
  std::span<const std::uint8_t> bmp(std::size_t i) const {
    if (i >= at_.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(at_.size()), std::to_string(i), "");
    return {bmps_[at_[i].first].data() + std::size_t{at_[i].second} * cifar::kBmpBytes, cifar::kBmpBytes};
  }

  Loaded l_;
  std::vector<std::vector<std::uint8_t>> bmps_;  // per batch, its images as BMP files one after another
  std::unique_ptr<ByteSource> source_;
  std::string display_;
  std::vector<ZipEntry> entries_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> at_;  // (batch, row) of each entry
  EntryLabels labels_;
  NameTable by_name_;
};

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

std::optional<fs::path> cifar_folder(const fs::path& dir) {
  if (cifar::layout_of(file_names(dir))) return dir;
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && cifar::layout_of(file_names(e.path()))) found.push_back(e.path());
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    fail(ErrorKind::usage, dir.string(), "one CIFAR folder",
         "several: " + found[0].filename().string() + ", " + found[1].filename().string(),
         "name the one to read, e.g. " + found[0].string());
  }
  if (found.empty()) return std::nullopt;
  return found[0];
}

bool is_cifar_tar(const ByteSource& src, FileType type) {
  if (type != FileType::tar && type != FileType::gzip) return false;  // CIFAR ships .tar.gz
  std::string header;
  if (type == FileType::tar) {
    if (src.size() < 512) return false;
    header.resize(512);
    src.read_at(0, header.data(), header.size());
  } else {
    try {
      decode(src, type, "", [&](std::span<const std::uint8_t> piece) {
        const std::size_t n = std::min(piece.size(), std::size_t{512} - header.size());
        header.append(reinterpret_cast<const char*>(piece.data()), n);
        if (header.size() == 512) throw StopPeek{};
      });
    } catch (const StopPeek&) {
    } catch (const Error&) {
      return false;  // too large, or not gzip: the tar reader says what it is
    }
  }
  if (header.size() < 512) return false;
  const std::string name = member_name(header);
  return cifar::is_cifar_folder_name(name.substr(0, name.find('/')));
}

std::unique_ptr<Archive> open_cifar_tar(std::unique_ptr<ByteSource> src, FileType type, std::string display,
                                        const ArchiveOptions& options) {
  CifarFiles f;
  TarStream tar(display, f);
  decode(*src, type, display, [&](std::span<const std::uint8_t> piece) { tar.feed(piece); });
  tar.finish();
  std::vector<std::string> names;
  for (const auto& [name, bytes] : f.bytes) names.push_back(name);
  const auto layout = cifar::layout_of(names);
  if (!layout)
    fail(ErrorKind::invalid, display, "a CIFAR-10 or CIFAR-100 download (batches and their meta file)",
         "a tar of a CIFAR folder without them", "download it again");
  return std::make_unique<CifarArchive>(load(std::move(f), *layout, options), std::move(src), std::move(display));
}

std::unique_ptr<Archive> open_cifar_folder(const fs::path& dir, std::string display, const ArchiveOptions& options) {
  CifarFiles f;
  f.where = (dir / "").string();
  std::uint64_t total = 0;
  const std::vector<std::string> names = file_names(dir);
  for (const std::string& name : names) {
    if (!cifar::is_cifar_file(name)) continue;
    std::vector<std::uint8_t> bytes = read_file_capped(dir / name, kDefaultMaxFileBytes);
    total += bytes.size();
    if (total > kMaxCifarBytes)
      fail(ErrorKind::invalid, f.where, "CIFAR's files, at most " + format_size(kMaxCifarBytes) + " together", "more",
           "this is not a CIFAR download");
    f.bytes.emplace(name, std::string(bytes.begin(), bytes.end()));
  }
  const Layout layout = *cifar::layout_of(names);
  return std::make_unique<CifarArchive>(load(std::move(f), layout, options), memory_byte_source("", display),
                                        std::move(display));
}

}  // namespace frugal
