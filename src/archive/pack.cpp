#include "frugal/archive/pack.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <thread>

#include "archive/leftovers.h"
#include "archive/mnist_idx.h"
#include "archive/part_writer.h"
#include "archive/readers.h"
#include "archive/zip_writer.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/image/image.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace {

// The whole-zip sink: buffered, because the zip writer issues many small header writes.
class FileSink : public ByteSink {
 public:
  FileSink(Env& env, const std::filesystem::path& path) : file_(env, path) { buf_.reserve(kBuffer); }
  void write(const void* data, std::size_t n) override {
    if (buf_.size() + n > kBuffer) drain();
    if (n >= kBuffer) {
      file_.file().append(data, n);
    } else {
      auto* p = static_cast<const char*>(data);
      buf_.insert(buf_.end(), p, p + n);
    }
    offset_ += n;
  }
  std::uint64_t offset() const override { return offset_; }
  void commit() {
    drain();
    file_.commit();
  }

 private:
  static constexpr std::size_t kBuffer = 4u << 20;
  void drain() {
    if (!buf_.empty()) file_.file().append(buf_.data(), buf_.size());
    buf_.clear();
  }
  AtomicWrite file_;
  std::vector<char> buf_;
  std::uint64_t offset_ = 0;
};

using MakeEntry = std::function<PreparedEntry(std::size_t)>;

// Prepares entries 0..n-1 on `threads` threads in batches and writes them in order; the
// previous batch is written while the next one is prepared.
void write_entries(std::size_t n, const MakeEntry& make, int threads, ZipWriter& zip, PackResult& result) {
  constexpr std::size_t kBatch = 512;
  Progress progress("pack", n, Progress::Unit::items);
  std::vector<PreparedEntry> ready, next;
  auto write_batch = [&](std::vector<PreparedEntry>& batch) {
    for (auto& e : batch) {
      zip.add(e);
      ++(e.method == 8 ? result.deflated : result.stored);
    }
    progress.advance(batch.size());
    batch.clear();
  };
  for (std::size_t start = 0; start < n; start += kBatch) {
    std::size_t count = std::min(kBatch, n - start);
    next.assign(count, PreparedEntry{});
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          for (std::size_t i = static_cast<std::size_t>(t); i < count; i += static_cast<std::size_t>(threads))
            next[i] = make(start + i);
        } catch (...) {
          errors[static_cast<std::size_t>(t)] = std::current_exception();
        }
      });
    std::exception_ptr write_error;
    try {
      write_batch(ready);
    } catch (...) {
      write_error = std::current_exception();
    }
    for (auto& th : pool) th.join();
    if (write_error) std::rethrow_exception(write_error);
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    std::swap(ready, next);
  }
  write_batch(ready);
  progress.finish();
}

std::string with_root(const std::string& root, const std::string& name) {
  if (root.empty()) return name;
  return root.back() == '/' ? root + name : root + "/" + name;
}

// The root becomes part of every entry name: it must not make names that extract outside the
// target folder (what `frugal extract` and careful unzippers refuse anyway).
void check_root(const std::string& root) {
  bool bad = root.starts_with('/') || root.find('\\') != std::string::npos;
  for (const auto& part : std::filesystem::path(root)) bad = bad || part == "..";
  if (bad)
    fail(ErrorKind::usage, "{root} " + root, "a relative folder name without '..' or '\\'", "'" + root + "'",
         "give a plain name such as 'fashion-mnist'");
}

struct Plan {
  std::size_t count = 0;
  MakeEntry make;
  std::vector<std::pair<std::string, std::size_t>> classes;
};

// Files some writer has not finished: a temporary (complete-looking: an extract or a download
// killed before its rename) or a join's partial output. Packed, they would be trained on as data.
bool is_unfinished(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  return is_temp_path(file) || name.ends_with(".frugal-join") || name.ends_with(".frugal-join.state");
}

// The folder's files as training reads them (folder_archive.cpp): a link to a file or folder inside
// it is packed as what it leads to, under its own name; links out of the folder (a link to
// /etc/passwd would put that file in the zip), cycles, broken links, FIFOs and devices are not,
// and are said in one line.
Plan plan_folder(const std::filesystem::path& src, const PackOptions& opt,
                 std::shared_ptr<std::vector<std::string>> files, std::size_t& unfinished) {
  const auto folder = open_folder_archive(src, {});
  auto targets = std::make_shared<std::vector<std::filesystem::path>>();
  std::size_t not_files = 0;
  std::string example;
  for (std::size_t i = 0; i < folder->entries().size(); ++i) {
    const ZipEntry& e = folder->entries()[i];
    if (e.is_dir) continue;
    if (e.is_symlink || e.special != SpecialMember::none) {
      if (not_files++ == 0) example = e.name;
      continue;
    }
    if (is_unfinished(e.raw_name)) {
      ++unfinished;
      continue;
    }
    files->push_back(e.raw_name);
    targets->push_back(*folder_file(*folder, i));
  }
  if (not_files > 0)
    note(src.string() + ": " + std::to_string(not_files) + " links and special files not packed (e.g. " + example +
         "): links are followed only to files and folders inside the folder");
  if (files->empty())
    fail(ErrorKind::usage, src.string(), "a folder of class sub-folders holding files", "no files",
         "give the dataset's top folder");
  Plan plan;  // the listing is sorted by name: so is the archive
  plan.count = files->size();
  std::map<std::string, std::size_t> classes;
  for (const auto& f : *files) {
    auto slash = f.find('/');
    ++classes[slash == std::string::npos ? "" : f.substr(0, slash)];
  }
  plan.classes.assign(classes.begin(), classes.end());
  plan.make = [targets, files, root = opt.root, level = opt.level](std::size_t i) {
    return prepare_file_entry(with_root(root, (*files)[i]), (*targets)[i], level);
  };
  return plan;
}

Plan plan_idx(const std::filesystem::path& src, const PackOptions& opt) {
  IdxSet set = find_idx_set(src, opt.idx_set);
  auto images = std::make_shared<IdxImages>(read_idx_images(set.images, opt.max_file_bytes));
  auto labels = read_idx_labels(set.labels, opt.max_file_bytes);
  if (labels.size() != images->count)
    fail(ErrorKind::invalid, set.labels.string(),
         std::to_string(images->count) + " labels (one per image in " + set.images.filename().string() + ")",
         std::to_string(labels.size()), "give the matching labels file");
  std::size_t classes = labels.empty() ? 0 : *std::max_element(labels.begin(), labels.end()) + 1u;
  auto names = opt.class_names.empty() ? default_class_names(set.images, classes) : opt.class_names;
  if (names.size() < classes)
    fail(ErrorKind::usage, "{class_names}",
         std::to_string(classes) + " names (labels go up to " + std::to_string(classes - 1) + ")",
         std::to_string(names.size()), "give one name per class");
  std::size_t width = std::max<std::size_t>(5, std::to_string(images->count > 0 ? images->count - 1 : 0).size());
  // (name, image index), sorted by name so the archive order is the sorted order
  auto order = std::make_shared<std::vector<std::pair<std::string, std::uint32_t>>>();
  std::vector<std::size_t> per_class(names.size());
  for (std::uint32_t i = 0; i < images->count; ++i) {
    std::string idx = std::to_string(i);
    std::string name = names[labels[i]] + "/" + set.name + "_" + std::string(width - idx.size(), '0') + idx + ".png";
    order->emplace_back(with_root(opt.root, name), i);
    ++per_class[labels[i]];
  }
  std::sort(order->begin(), order->end());
  Plan plan;
  plan.count = order->size();
  for (std::size_t c = 0; c < names.size(); ++c) plan.classes.emplace_back(names[c], per_class[c]);
  plan.make = [images, order, level = opt.level](std::size_t k) {
    const auto& [name, i] = (*order)[k];
    const std::size_t pixels = std::size_t(images->rows) * images->cols;
    auto png = encode_png({images->pixels.data() + pixels * i, pixels}, images->cols, images->rows, 1);
    return prepare_entry(name, std::move(png), level);
  };
  return plan;
}
}  // namespace

PackResult pack(const std::filesystem::path& src, const PackOptions& opt, Env& env) {
  if (opt.output.empty()) fail(ErrorKind::usage, "pack", "-o OUT.zip", "no output", "give -o OUT.zip");
  if (!std::filesystem::exists(src))
    fail(ErrorKind::usage, src.string(), "a folder or IDX file", "nothing there", "check the path");
  check_root(opt.root);
  if (opt.max_file_bytes == 0) fail(ErrorKind::usage, "{max_file_bytes}", "a size above 0", "0", "");
  PackResult result;
  const bool idx = !std::filesystem::is_directory(src) || !opt.idx_set.empty() || folder_has_idx(src);
  result.source = idx ? "idx" : "folder";
  if (!idx && !opt.class_names.empty())
    fail(ErrorKind::usage, src.string(), "IDX files for {class_names}", "a folder of class sub-folders",
         "the sub-folders' names are the class names; drop {class_names}");
  Plan plan = idx ? plan_idx(src, opt)
                  : plan_folder(src, opt, std::make_shared<std::vector<std::string>>(), result.unfinished_skipped);
  result.classes = plan.classes;
  const auto dir = opt.output.parent_path().empty() ? std::filesystem::path(".") : opt.output.parent_path();
  const std::string name = opt.output.filename().string();
  // The count is not known before the archive is written; the manifest's name (".manifest.json"
  // added) is the longest of any set of fewer than 10^9 parts.
  if (opt.split_size > 0) PartWriter::check_names_fit(dir, name, 1);
  if (!opt.output.parent_path().empty()) env.create_dirs(opt.output.parent_path());
  // An interrupted pack of this output left whole archives or parts under temporary names.
  result.temporaries_removed =
      opt.split_size > 0
          ? PartWriter::remove_abandoned(dir, name)
          : remove_abandoned_temporaries(dir, [&](const std::string& t) { return is_temp_for(t, name); });
  const int threads = std::max(1, opt.threads);

  if (opt.split_size > 0) {
    const auto manifest_path = dir / (name + ".manifest.json");
    env.remove_file(manifest_path);  // never leave a manifest that names parts we replace
    PartWriter parts(dir, name, opt.split_size, 4, true, env);
    ZipWriter zip(parts);
    write_entries(plan.count, plan.make, threads, zip, result);
    zip.finish();
    result.bytes = parts.offset();
    result.parts = parts.finish(manifest_path).parts.size();
    result.output = manifest_path;
    result.entries = zip.entries();
    result.zip64 = zip.zip64();
  } else {
    FileSink file(env, opt.output);
    ZipWriter zip(file);
    write_entries(plan.count, plan.make, threads, zip, result);
    zip.finish();
    file.commit();
    result.bytes = file.offset();
    result.output = opt.output;
    result.entries = zip.entries();
    result.zip64 = zip.zip64();
  }
  return result;
}

}  // namespace frugal
