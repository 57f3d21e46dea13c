// `frugal verify`: every part and every entry, on all cores, listing every bad item.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <thread>

#include "archive/manifest.h"
#include "archive/part_set.h"
#include "frugal/archive.h"
#include "frugal/error.h"
#include "frugal/input_path.h"
#include "frugal/progress.h"

namespace frugal {

namespace {

unsigned thread_count(unsigned threads) {
  if (threads) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// "<archive>:<entry>: expected ..." -> "expected ...": the name is reported beside the problem.
std::string strip_where(const std::string& what, const std::string& where) {
  if (what.compare(0, where.size(), where) == 0 && what.compare(where.size(), 2, ": ") == 0)
    return what.substr(where.size() + 2);
  return what;
}

void verify_parts(const SplitManifest& m, VerifyReport& report, unsigned threads) {
  std::uint64_t total = 0;
  for (const auto& p : m.parts) total += p.size;
  Progress progress("verify parts", total);
  std::vector<std::string> problems(m.parts.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < m.parts.size();) {
      problems[i] = check_part(m, i);
      progress.advance(m.parts[i].size);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<std::size_t>(thread_count(threads), m.parts.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  progress.finish();
  report.parts_checked += m.parts.size();
  for (std::size_t i = 0; i < m.parts.size(); ++i)
    if (!problems[i].empty()) report.bad.push_back({m.parts[i].file, problems[i]});
}

bool looks_like_zip(const ByteSource& src, const std::string& name) {
  if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".zip") == 0) return true;
  if (src.size() < 4) return false;
  std::uint8_t b[4];
  src.read_at(0, b, 4);
  return b[0] == 'P' && b[1] == 'K' && (b[2] == 3 || b[2] == 5 || b[2] == 7) && (b[3] == 4 || b[3] == 6 || b[3] == 8);
}

}  // namespace

void verify_entries(const Archive& archive, VerifyReport& report, unsigned threads) {
  const auto& entries = archive.entries();
  std::uint64_t total = 0;
  for (const auto& e : entries) total += e.compressed_size;
  Progress progress("verify " + archive.display_name(), total);
  std::vector<std::string> problems(entries.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> bytes{0};
  constexpr std::size_t kChunk = 64;  // entries per grab: small entries would contend on `next`
  auto work = [&] {
    for (std::size_t begin; (begin = next.fetch_add(kChunk)) < entries.size();) {
      const std::size_t end = std::min(entries.size(), begin + kChunk);
      std::uint64_t done = 0, checked = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const ZipEntry& e = entries[i];
        std::string problem = entry_problem(archive, i);
        if (!e.encrypted && (e.method == 0 || e.method == 8)) {
          try {
            archive.read_to(i, [&](std::span<const std::uint8_t> piece) { checked += piece.size(); });
          } catch (const Error& err) {
            if (!problem.empty()) problem += "; ";
            problem += strip_where(err.what(), archive.display_name() + ":" + e.name);
          } catch (const std::bad_alloc&) {
            if (!problem.empty()) problem += "; ";
            problem += "not enough memory to inflate " + std::to_string(e.size) + " bytes";
          }
        }
        problems[i] = std::move(problem);
        done += e.compressed_size;
      }
      bytes += checked;
      progress.advance(done);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < thread_count(threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  progress.finish();
  report.entries_checked += entries.size();
  report.bytes_checked += bytes;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!problems[i].empty()) report.bad.push_back({entries[i].name, problems[i]});
}

VerifyReport verify_archive(const std::filesystem::path& given, const ArchiveOptions& options, unsigned threads) {
  // A missing name, a folder or a typo is the user's to fix (exit 2), not a bad item of the archive.
  const std::filesystem::path path = check_input(given, InputKind::archive);
  VerifyReport report;
  std::string zip_name = path.filename().string();
  const bool manifest = is_manifest_path(path);
  if (manifest) {
    SplitManifest m = SplitManifest::load(path);
    verify_parts(m, report, threads);
    zip_name = m.name;
    // A missing or resized part leaves no virtual file to read; the list above says which.
    for (const auto& b : report.bad)
      if (b.problem == "missing" || b.problem.rfind("size ", 0) == 0) return report;
  }
  std::unique_ptr<ByteSource> src;
  try {
    src = open_byte_source(path);
  } catch (const Error& err) {
    if (err.kind() == ErrorKind::io || err.kind() == ErrorKind::usage) throw;
    report.bad.push_back({path.string(), strip_where(err.what(), path.string())});
    return report;
  }
  // A manifest may describe any file; anything else given to verify must be a zip.
  if (manifest && !looks_like_zip(*src, zip_name)) return report;
  report.is_zip = true;
  std::unique_ptr<Archive> archive;
  try {
    archive = Archive::open(std::move(src), path.string(), options);
  } catch (const Error& err) {
    if (err.kind() == ErrorKind::io || err.kind() == ErrorKind::usage) throw;
    report.bad.push_back({path.string(), strip_where(err.what(), path.string())});
    return report;
  }
  verify_entries(*archive, report, threads);
  return report;
}

}  // namespace frugal
