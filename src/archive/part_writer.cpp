#include "archive/part_writer.h"

#include <unistd.h>

#include <cstring>

#include "archive/leftovers.h"

#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace frugal {
namespace {
// Large enough that the per-call costs of read/write/hash vanish; two of them alternate between
// the whole-stream hash thread and the part writer.
constexpr std::size_t kBufferSize = 8u << 20;

int digits_for(std::size_t count) {
  int d = 1;
  for (std::size_t v = count > 0 ? count - 1 : 0; v >= 10; v /= 10) ++d;
  return d;
}
}  // namespace

std::string PartWriter::part_name(const std::string& name, std::size_t index, int digits) {
  std::string num = std::to_string(index);
  if (static_cast<int>(num.size()) < digits) num.insert(0, static_cast<std::size_t>(digits) - num.size(), '0');
  return name + ".part" + num;
}

void PartWriter::check_names_fit(const std::filesystem::path& dir, const std::string& name, std::uint64_t parts) {
  std::filesystem::path base = dir.empty() ? std::filesystem::path(".") : dir;
  std::error_code ec;
  while (!std::filesystem::is_directory(base, ec) && base.has_parent_path() && base != base.parent_path())
    base = base.parent_path();
  const long conf = ::pathconf(base.c_str(), _PC_NAME_MAX);
  const std::size_t name_max = conf > 0 ? static_cast<std::size_t>(conf) : 255;
  const std::string manifest = name + ".manifest.json";
  const std::string last_part = part_name(name, parts > 0 ? parts - 1 : 0, std::max(4, digits_for(parts)));
  const std::string& longest = manifest.size() >= last_part.size() ? manifest : last_part;
  if (longest.size() <= name_max) return;
  fail(ErrorKind::unsupported, name,
       "a name whose parts and manifest fit this file system (names of at most " + std::to_string(name_max) +
           " bytes, so at most " + std::to_string(name_max - (longest.size() - name.size())) + " for this one)",
       "a name of " + std::to_string(name.size()) + " bytes (" + longest.substr(name.size()) + " added makes " +
           std::to_string(longest.size()) + ")",
       "nothing was written; rename the file to a shorter name first");
}

std::size_t PartWriter::remove_abandoned(const std::filesystem::path& dir, const std::string& name) {
  const std::string manifest = name + ".manifest.json";
  const std::string parts = name + ".part";
  return remove_abandoned_temporaries(dir.empty() ? "." : dir, [&](const std::string& temp) {
    return is_temp_for(temp, manifest) || temp_prefix_matches(temp, [&](std::string_view prefix, bool cut) {
             // "NAME.part" and digits, or a cut beginning of such a name
             const std::size_t common = std::min(prefix.size(), parts.size());
             if (prefix.substr(0, common) != std::string_view(parts).substr(0, common)) return false;
             if (prefix.size() < parts.size()) return cut;
             const std::string_view digits = prefix.substr(parts.size());
             return (cut || !digits.empty()) && digits.find_first_not_of("0123456789") == std::string_view::npos;
           });
  });
}

PartWriter::PartWriter(std::filesystem::path dir, std::string name, std::uint64_t part_size, int digits, bool sync,
                       Env& env)
    : env_(env), dir_(std::move(dir)), name_(std::move(name)), part_size_(part_size), digits_(digits), sync_(sync) {
  if (part_size_ == 0) fail(ErrorKind::usage, name_, "a part size above 0", "0", "give {size} like 1000M");
  buf_[0].resize(kBufferSize);
  buf_[1].resize(kBufferSize);
  manifest_.name = name_;
  manifest_.dir = dir_;
}

PartWriter::~PartWriter() {
  if (finished_) return;
  whole_.wait();  // the worker may still read a buffer we are about to free
  // Best effort, and the open part first, while its lock is still held (fs.h): never swept as
  // abandoned by someone else meanwhile.
  auto remove = [&](const std::filesystem::path& p) {
    try {
      env_.remove_file(p);
    } catch (const std::exception&) {}
  };
  if (part_) remove(temp_);
  part_.reset();
  for (const auto& p : manifest_.parts) remove(dir_ / p.file);
}

std::span<char> PartWriter::space() {
  if (fill_ == kBufferSize) flush();
  return {buf_[cur_].data() + fill_, kBufferSize - fill_};
}

void PartWriter::commit(std::size_t n) {
  fill_ += n;
  total_ += n;
}

void PartWriter::write(const void* data, std::size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    auto s = space();
    std::size_t k = std::min(n, s.size());
    std::memcpy(s.data(), p, k);
    commit(k);
    p += k;
    n -= k;
  }
}

void PartWriter::flush() {
  if (fill_ == 0) return;
  whole_.submit(buf_[cur_].data(), fill_);
  write_to_parts(buf_[cur_].data(), fill_);
  cur_ ^= 1;
  fill_ = 0;
}

void PartWriter::write_to_parts(const char* p, std::size_t n) {
  while (n > 0) {
    if (!part_) open_part();
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, part_size_ - part_written_));
    part_sha_->update(p, k);
    part_->append(p, k);
    part_written_ += k;
    p += k;
    n -= k;
    if (part_written_ == part_size_) close_part();
  }
}

void PartWriter::open_part() {
  const auto final_path = dir_ / part_name(name_, manifest_.parts.size(), digits_);
  temp_ = temp_path_for(final_path);
  part_ = env_.new_writable_file(temp_);  // owned: `clean` and budgets see a live writer's part
  part_sha_ = std::make_unique<Sha256>();
  part_written_ = 0;
}

void PartWriter::close_part() {
  const std::string file = part_name(name_, manifest_.parts.size(), digits_);
  if (sync_) part_->sync();
  part_->close();
  // The file object keeps a duplicate of the descriptor holding the owner's lock until it is
  // destroyed, so the temporary stays owned until it has its final name.
  env_.rename_file(temp_, dir_ / file);
  part_.reset();
  manifest_.parts.push_back({file, part_written_, part_sha_->hex_digest()});
}

SplitManifest PartWriter::finish(const std::filesystem::path& manifest_path) {
  flush();
  if (part_ || manifest_.parts.empty()) {  // an empty stream still gets its one (empty) part
    if (!part_) open_part();
    close_part();
  }
  manifest_.size = total_;
  manifest_.sha256 = whole_.hex_digest();
  int need = digits_for(manifest_.parts.size());
  if (need > digits_) {
    for (std::size_t i = 0; i < manifest_.parts.size(); ++i) {
      std::string wider = part_name(name_, i, need);
      env_.rename_file(dir_ / manifest_.parts[i].file, dir_ / wider);
      manifest_.parts[i].file = wider;
    }
  }
  if (sync_) env_.sync_dir(dir_);
  try {
    manifest_.save(manifest_path, env_);
  } catch (const std::exception&) {
    // Failed after its rename (the folder sync): the destructor removes the parts, so the
    // manifest that names them must go first.
    try {
      env_.remove_file(manifest_path);
    } catch (const std::exception&) {}
    throw;
  }
  finished_ = true;
  return manifest_;
}

}  // namespace frugal
