#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "archive/manifest.h"
#include "archive/part_writer.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/archive/split.h"

namespace frugal {
namespace {
int digits_for_parts(std::uint64_t parts) {
  int d = 1;
  for (std::uint64_t v = parts > 0 ? parts - 1 : 0; v >= 10; v /= 10) ++d;
  return std::max(d, 4);
}

// "<name>.part<digits>": what split_file writes for `name`, and so the only names it may remove.
bool is_own_part_name(const std::string& file, const std::string& name) {
  const std::string prefix = name + ".part";
  return file.size() > prefix.size() && file.compare(0, prefix.size(), prefix) == 0 &&
         file.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

// Forgets an earlier split of the same name first, so that no manifest ever lists parts of two
// different runs. Returns the parts it listed that an earlier split of `name` wrote (named as split
// names them, with the size the manifest gives), to remove those the new set does not reuse. A stale
// or crafted manifest may name any file in the folder (the source file itself, the user's files):
// those are never removed.
std::map<std::string, std::uint64_t> retire_old_manifest(const std::filesystem::path& manifest_path,
                                                         const std::string& name) {
  std::map<std::string, std::uint64_t> old;
  if (!std::filesystem::exists(manifest_path)) return old;
  try {
    for (const auto& p : SplitManifest::load(manifest_path).parts)
      if (is_own_part_name(p.file, name)) old.emplace(p.file, p.size);
  } catch (const Error&) {
    // An unreadable old manifest names no parts we could safely remove; it is replaced below.
  }
  std::filesystem::remove(manifest_path);
  return old;
}

void remove_stale_parts(const std::filesystem::path& dir, const std::map<std::string, std::uint64_t>& stale) {
  for (const auto& [file, size] : stale) {
    struct stat st {};
    const auto path = dir / file;
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == size)
      std::filesystem::remove(path);
  }
}
}  // namespace

SplitResult split_file(const std::filesystem::path& file, const SplitOptions& options) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) fail_errno("open", file.string(), errno);
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::usage, file.string(), "a regular file", "a folder or special file", "give the file to split");
  if (options.part_size == 0) fail(ErrorKind::usage, file.string(), "{size} above 0", "0", "give a size like 1000M");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::filesystem::path dir = options.out_dir.empty() ? file.parent_path() : options.out_dir;
  const std::string name = file.filename().string();
  const std::uint64_t parts = size == 0 ? 1 : (size + options.part_size - 1) / options.part_size;
  PartWriter::check_names_fit(dir, name, parts);
  if (std::error_code made; !dir.empty() && !std::filesystem::create_directories(dir, made) && made)
    fail_errno("create folder", dir.string(), made.value());
  const auto manifest_path = (dir.empty() ? std::filesystem::path(".") : dir) / (name + ".manifest.json");
  // Part-sized temporaries of an interrupted split of this file would stay forever otherwise.
  const std::size_t leftovers = PartWriter::remove_abandoned(manifest_path.parent_path(), name);
  auto old_parts = retire_old_manifest(manifest_path, name);

  UniqueFd fd = open_read(file);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  PartWriter writer(manifest_path.parent_path(), name, options.part_size, digits_for_parts(parts), options.sync);
  Progress progress("split " + name, size);
  for (;;) {
    auto space = writer.space();
    ssize_t r = ::read(fd.get(), space.data(), space.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      fail_errno("read", file.string(), errno);
    }
    if (r == 0) break;
    writer.commit(static_cast<std::size_t>(r));
    progress.advance(static_cast<std::uint64_t>(r));
  }
  if (writer.offset() != size)
    fail(ErrorKind::io, file.string(), std::to_string(size) + " bytes", std::to_string(writer.offset()) + " bytes",
         "the file changed while it was being split; split it again once nothing writes to it");
  SplitManifest m = writer.finish(manifest_path);
  progress.finish();

  for (const auto& p : m.parts) old_parts.erase(p.file);
  remove_stale_parts(m.dir, old_parts);

  SplitResult result{manifest_path, m.name, m.size, m.sha256, {}, leftovers};
  for (const auto& p : m.parts) result.parts.push_back({p.file, p.size, p.sha256});
  return result;
}

}  // namespace frugal
