// `frugal verify`: every part and every entry, on all cores, listing every bad item.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <thread>

#include <nlohmann/json.hpp>

#include "archive/manifest.h"
#include "archive/part_set.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/data_source.h"
#include "frugal/util/error.h"
#include "frugal/archive/file_type.h"
#include "frugal/util/input_path.h"
#include "frugal/util/progress.h"

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

// Whether the file a manifest describes is an archive whose entries verify can check too.
bool looks_like_archive(const ByteSource& src, const std::string& name) {
  if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".zip") == 0) return true;
  std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<std::uint64_t>(src.size(), 512)));
  if (!head.empty()) src.read_at(0, head.data(), head.size());
  const FileType t = sniff_file_type(head).type;
  return t == FileType::zip || t == FileType::tar;
}

// Opens with `open`, reporting an archive that does not open as one bad item named `path`.
template <class Open>
std::unique_ptr<Archive> open_or_report(const std::string& path, VerifyReport& report, Open open) {
  try {
    return open();
  } catch (const Error& err) {
    if (err.kind() == ErrorKind::io || err.kind() == ErrorKind::usage) throw;
    report.bad.push_back({path, strip_where(err.what(), path)});
    return nullptr;
  }
}

}  // namespace

void verify_entries(const Archive& archive, VerifyReport& report, unsigned threads) {
  const auto& entries = archive.entries();
  std::uint64_t total = 0;
  for (const auto& e : entries) total += e.compressed_size;
  Progress progress("verify " + archive.display_name(), total);
  std::vector<std::string> problems(entries.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> bytes{0}, unchecked{0};
  constexpr std::size_t kChunk = 64;  // entries per grab: small entries would contend on `next`
  auto work = [&] {
    for (std::size_t begin; (begin = next.fetch_add(kChunk)) < entries.size();) {
      const std::size_t end = std::min(entries.size(), begin + kChunk);
      std::uint64_t done = 0, checked = 0, without_checksum = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const ZipEntry& e = entries[i];
        std::string problem = entry_problem(archive, i);
        // A tar's links and special members have no bytes to read (entry_problem() names them).
        const bool readable = !e.encrypted && (e.method == 0 || e.method == 8) && e.special == SpecialMember::none &&
                              (e.has_crc32 || !e.is_symlink);
        if (readable) {
          without_checksum += !e.has_crc32;
          try {
            archive.read_to(i, [&](std::span<const std::uint8_t> piece) { checked += e.has_crc32 ? piece.size() : 0; });
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
      unchecked += without_checksum;
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
  report.entries_without_checksum += unchecked;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!problems[i].empty()) report.bad.push_back({entries[i].name, problems[i]});
}

VerifyReport verify_archive(const std::filesystem::path& given, const ArchiveOptions& given_options, unsigned threads) {
  VerifyReport report;
  // What is verified is what the data says: a tar's headers and a parquet file's rows are read
  // again, never taken from an index cache (a cache that lied would be checked against itself).
  ArchiveOptions options = given_options;
  options.index_cache_dir = std::filesystem::path();
  // A folder, DATA:SUB, a shard pattern or a root: whatever Archive::open reads, verified as opened.
  std::error_code ec;
  if (std::filesystem::is_directory(given, ec) || !parse_data_spec(given.string()).rest.empty() ||
      is_shard_pattern(given.string()) || !options.root.empty()) {
    auto archive = open_or_report(given.string(), report, [&] { return Archive::open(given, options); });
    if (!archive) return report;
    report.is_zip = std::string(archive->format()) == "zip";
    verify_entries(*archive, report, threads);
    return report;
  }
  // A missing name, a folder or a typo is the user's to fix (exit 2), not a bad item of the archive.
  const std::filesystem::path path = check_input(given, InputKind::archive);
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
  // A manifest may describe any file; anything else given to verify must be an archive.
  if (manifest && !looks_like_archive(*src, zip_name)) return report;
  auto archive =
      open_or_report(path.string(), report, [&] { return Archive::open(std::move(src), path.string(), options); });
  if (!archive) {
    report.is_zip = true;
    return report;
  }
  report.is_zip = std::string(archive->format()) == "zip";
  verify_entries(*archive, report, threads);
  return report;
}

std::string verify_report_json(const VerifyReport& r) {
  nlohmann::json bad = nlohmann::json::array();
  for (const auto& b : r.bad) bad.push_back({{"name", b.name}, {"problem", b.problem}});
  return nlohmann::json{{"ok", r.ok()},
                        {"bad", std::move(bad)},
                        {"parts_checked", r.parts_checked},
                        {"entries_checked", r.entries_checked},
                        {"bytes_checked", r.bytes_checked},
                        {"entries_without_checksum", r.entries_without_checksum}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace frugal
