// Views of an archive: a sub-folder (its entries, renamed relative to it) and the window of bytes
// an archive stored inside another one is read through.
#include <algorithm>
#include <set>

#include "archive/readers.h"
#include "archive/zip_index.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal {
namespace {

// The first `n` '/'-separated components of `name` taken off ("train/cats/a.jpg", 1 -> "cats/a.jpg").
std::string drop_components(const std::string& name, std::size_t n) {
  std::size_t at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t slash = name.find('/', at);
    if (slash == std::string::npos) return "";
    at = slash + 1;
  }
  return name.substr(at);
}

class SubArchive final : public Archive {
 public:
  SubArchive(std::unique_ptr<Archive> base, const std::string& root) : base_(std::move(base)) {
    display_ = base_->display_name() + ":" + root;
    const std::string prefix = root + "/";
    const std::size_t depth = static_cast<std::size_t>(std::count(root.begin(), root.end(), '/')) + 1;
    const auto& all = base_->entries();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const ZipEntry& e = all[i];
      if (e.name.size() <= prefix.size() || e.name.compare(0, prefix.size(), prefix) != 0) continue;
      ZipEntry s = e;
      s.name = e.name.substr(prefix.size());
      s.raw_name = drop_components(e.raw_name, depth);
      s.duplicate_name = false;
      s.duplicate_of = 0;
      entries_.push_back(std::move(s));
      inner_.push_back(i);
    }
    by_name_.build(entries_);
    if (const EntryLabels* el = base_->entry_labels()) labels_ = sub_labels(*el);
  }

  const char* format() const override { return base_->format(); }
  const std::vector<ZipEntry>& entries() const override { return entries_; }
  std::optional<std::size_t> find(std::string_view name) const override {
    if (auto i = by_name_.find(entries_, name)) return *i;
    return std::nullopt;
  }
  const std::string& display_name() const override { return display_; }
  const ByteSource& source() const override { return base_->source(); }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override { base_->read(inner(i), out); }
  void read_to(std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) const override {
    base_->read_to(inner(i), sink);
  }
  std::optional<std::span<const std::uint8_t>> stored_view(std::size_t i) const override {
    return base_->stored_view(inner(i));
  }
  std::optional<std::uint64_t> stored_offset(std::size_t i) const override { return base_->stored_offset(inner(i)); }
  // The base's labels of the entries under the folder (CIFAR's test/, a parquet file's rows).
  const EntryLabels* entry_labels() const override { return labels_ ? &*labels_ : nullptr; }

  const Archive& base() const { return *base_; }
  std::size_t inner(std::size_t i) const {
    if (i >= inner_.size())
      fail(ErrorKind::usage, display_, "an entry index below " + std::to_string(inner_.size()), std::to_string(i), "");
    return inner_[i];
  }

 private:
  std::unique_ptr<Archive> base_;
  std::string display_;
  std::vector<ZipEntry> entries_;
  std::vector<std::size_t> inner_;
  NameTable by_name_;
  std::optional<EntryLabels> labels_;

  // Per-entry vectors picked for the entries kept; the rest as the base has it.
  EntryLabels sub_labels(const EntryLabels& el) const {
    EntryLabels out = el;
    auto pick = [&](auto& v, const auto& from) {
      if (from.empty()) return;
      v.clear();
      for (const std::size_t i : inner_) v.push_back(from.at(i));
    };
    pick(out.label, el.label);
    pick(out.text, el.text);
    pick(out.sample_member, el.sample_member);
    pick(out.io_group, el.io_group);
    return out;
  }
};

// The top-level folders of `a`, for a message naming what there is instead.
std::string top_folders(const Archive& a) {
  std::set<std::string> tops;
  for (const ZipEntry& e : a.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0) tops.insert(e.name.substr(0, slash + 1));
    if (tops.size() > 12) break;
  }
  if (tops.empty()) return "it has no folders";
  std::string s = "its folders: ";
  std::size_t n = 0;
  for (const auto& t : tops) {
    if (++n > 10) {
      s += ", ...";
      break;
    }
    s += (n > 1 ? ", " : "") + t;
  }
  return s;
}

}  // namespace

std::unique_ptr<Archive> open_sub_archive(std::unique_ptr<Archive> base, const std::string& root) {
  auto sub = std::make_unique<SubArchive>(std::move(base), root);
  if (sub->entries().empty())
    fail(ErrorKind::usage, sub->base().display_name(), "a folder '" + root + "/' inside it", "none",
         top_folders(sub->base()));
  return sub;
}

WindowSource::WindowSource(std::unique_ptr<Archive> outer, std::uint64_t offset, std::uint64_t size)
    : outer_(std::move(outer)), offset_(offset), size_(size), base_(offset) {
  if (auto* w = dynamic_cast<const WindowSource*>(&outer_->source())) base_ += w->base();
  if (offset > outer_->source().size() || size > outer_->source().size() - offset)
    fail(ErrorKind::invalid, outer_->display_name(), "an inner archive inside the file", "bytes past its end",
         "the archive is damaged; copy it again");
}

void WindowSource::read_at(std::uint64_t offset, void* buf, std::size_t n) const {
  if (offset > size_ || n > size_ - offset)
    fail(ErrorKind::invalid, outer_->display_name(),
         "bytes " + std::to_string(offset) + ".." + std::to_string(offset + n) + " inside the inner archive",
         "an inner archive of " + std::to_string(size_) + " bytes", "the inner archive is truncated or damaged");
  outer_->source().read_at(offset_ + offset, buf, n);
}

std::optional<std::span<const std::uint8_t>> WindowSource::view(std::uint64_t offset, std::size_t n) const {
  if (offset > size_ || n > size_ - offset) return std::nullopt;
  return outer_->source().view(offset_ + offset, n);
}

}  // namespace frugal
