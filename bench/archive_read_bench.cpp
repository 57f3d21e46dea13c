// Measures frugal's readers for bench/verify.sh and bench/readers.sh (no frugal debug sub-command):
//   archive_read_bench open ZIP            best-of-3 seconds to open (parse the central directory)
//   archive_read_bench open1 DATA CACHE    seconds of one open of any DATA (a tar: its index cached in
//                                          folder CACHE, or never with "-"), for first and cached opens
//   archive_read_bench group DATA CACHE    open1, then the WebDataset grouping (labels read): seconds of each
//   archive_read_bench random ZIP SEQ      seconds for the single-entry reads listed in SEQ (entry
//                                          indices, little-endian uint32, drawn by bench/verify.sh so
//                                          that Python reads the very same sequence), each looked up
//                                          by name and CRC-checked, on one thread, after opening once
//   archive_read_bench random ZIP SEQ by-index   the same, reading by entry index (frugal's loader
//                                          keeps indices), to show what the name lookup costs
//   archive_read_bench floor ZIP SEQ       the floor under any reader of those entries: libdeflate's
//                                          inflate (the inflater the reader uses) and CRC-32 alone,
//                                          over the same sequence, on compressed bytes loaded into
//                                          memory beforehand (no I/O, no lookup, no size or bound checks)
// Prints one JSON line.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <libdeflate.h>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/archive/webdataset.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Where entry e's compressed bytes start: after its local header (30 bytes, then name and extra).
std::uint64_t data_start(const std::vector<std::uint8_t>& file, const frugal::ZipEntry& e) {
  const std::uint8_t* h = file.data() + e.local_header_offset;
  return e.local_header_offset + 30u + (h[26] | h[27] << 8) + (h[28] | h[29] << 8);
}

int floor_reads(const frugal::Archive& a, const std::vector<std::uint32_t>& seq) {
  const auto& entries = a.entries();
  std::vector<std::uint8_t> file(a.source().size());  // the whole archive in memory, as a mapping holds it
  a.source().read_at(0, file.data(), file.size());
  std::vector<std::uint64_t> start(entries.size());
  for (std::uint32_t i : seq) start[i] = data_start(file, entries[i]);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (!d) throw frugal::Error(frugal::ErrorKind::io, "libdeflate_alloc_decompressor failed");
  std::uint64_t largest = 0;
  for (std::uint32_t i : seq) largest = std::max(largest, entries[i].size);
  // Sized once (no zero-filling inside the timing), with room past every entry: libdeflate's fast
  // loop stops short of the buffer's end (the reader gives it slack too).
  std::vector<std::uint8_t> out(largest + 4096);
  std::uint64_t bytes = 0, bad = 0;
  auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  for (const std::uint32_t i : seq) {
    const frugal::ZipEntry& e = entries[i];
    const std::uint8_t* p = file.data() + start[i];
    std::size_t got = e.compressed_size;
    if (e.method == 8) {
      if (libdeflate_deflate_decompress(d, p, e.compressed_size, out.data(), out.size(), &got) != LIBDEFLATE_SUCCESS)
        ++bad;
      p = out.data();
    }
    bad += libdeflate_crc32(0, p, got) != e.crc32;
    bytes += got;
  }
  const double wall = seconds_since(t0), cpu = cpu_seconds() - c0;
  libdeflate_free_decompressor(d);
  if (bad) {
    std::fprintf(stderr, "archive_read_bench: %llu entries failed to inflate or check\n",
                 static_cast<unsigned long long>(bad));
    return 3;
  }
  std::printf("{\"reads\": %zu, \"bytes\": %llu, \"seconds\": %.4f, \"cpu_seconds\": %.4f}\n", seq.size(),
              static_cast<unsigned long long>(bytes), wall, cpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: archive_read_bench open ZIP | open1 DATA CACHE | random ZIP SEQ [by-index] | floor ZIP SEQ\n");
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  try {
    if (mode == "open") {
      // Best of 3; CPU time beside wall time, as the machine may be shared.
      double best = 1e9, best_cpu = 1e9;
      std::size_t n = 0;
      for (int k = 0; k < 3; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_seconds();
        auto a = frugal::Archive::open(path);
        best = std::min(best, seconds_since(t0));
        best_cpu = std::min(best_cpu, cpu_seconds() - c0);
        n = a->entries().size();
      }
      std::printf("{\"entries\": %zu, \"open_seconds\": %.4f, \"open_cpu_seconds\": %.4f}\n", n, best, best_cpu);
      return 0;
    }
    if (mode == "open1" && argc >= 4) {
      frugal::ArchiveOptions options;
      options.index_cache_dir = std::string(argv[3]) == "-" ? std::filesystem::path() : std::filesystem::path(argv[3]);
      auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      auto a = frugal::Archive::open(path, options);
      const double wall = seconds_since(t0), cpu = cpu_seconds() - c0;
      std::printf("{\"entries\": %zu, \"open_seconds\": %.4f, \"open_cpu_seconds\": %.4f}\n", a->entries().size(), wall,
                  cpu);
      return 0;
    }
    if (mode == "group" && argc >= 4) {
      frugal::ArchiveOptions options;
      options.index_cache_dir = std::string(argv[3]) == "-" ? std::filesystem::path() : std::filesystem::path(argv[3]);
      auto t0 = std::chrono::steady_clock::now();
      auto a = frugal::Archive::open(path, options);
      const double open_s = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      const auto samples = frugal::group_webdataset(*a);
      std::printf("{\"entries\": %zu, \"samples\": %zu, \"open_seconds\": %.4f, \"group_seconds\": %.4f}\n",
                  a->entries().size(), samples.samples.size(), open_s, seconds_since(t0));
      return 0;
    }
    if ((mode == "random" || mode == "floor") && argc >= 4) {
      const bool by_index = argc >= 5 && std::string(argv[4]) == "by-index";
      auto a = frugal::Archive::open(path);
      std::ifstream seq_file(argv[3], std::ios::binary);
      const std::string raw((std::istreambuf_iterator<char>(seq_file)), {});
      if (!seq_file.is_open() || seq_file.bad() || raw.size() % 4 != 0) {
        std::fprintf(stderr, "archive_read_bench: %s: expected little-endian uint32 entry indices\n", argv[3]);
        return 2;
      }
      std::vector<std::uint32_t> seq(raw.size() / 4);
      std::memcpy(seq.data(), raw.data(), raw.size());  // x86/ARM hosts are little-endian
      if (std::any_of(seq.begin(), seq.end(), [&](std::uint32_t i) { return i >= a->entries().size(); })) {
        std::fprintf(stderr, "archive_read_bench: %s: an index past the %zu entries\n", argv[3], a->entries().size());
        return 2;
      }
      if (mode == "floor") return floor_reads(*a, seq);
      // A name list, as Python's namelist(): each read looks its name up, as zf.read(name) does.
      std::vector<std::string> names;
      for (const auto& e : a->entries()) names.push_back(e.name);
      std::vector<std::uint8_t> buf;
      std::uint64_t bytes = 0;
      auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      for (const std::uint32_t i : seq) {
        std::size_t at = i;
        if (!by_index) {
          const auto found = a->find(names[i]);
          if (!found) throw frugal::Error(frugal::ErrorKind::invalid, "no entry named " + names[i]);
          at = *found;
        }
        a->read(at, buf);  // inflates and checks size and CRC-32
        bytes += buf.size();
      }
      const double wall = seconds_since(t0), cpu = cpu_seconds() - c0;
      std::printf("{\"reads\": %zu, \"bytes\": %llu, \"seconds\": %.4f, \"cpu_seconds\": %.4f}\n", seq.size(),
                  static_cast<unsigned long long>(bytes), wall, cpu);
      return 0;
    }
  } catch (const frugal::Error& e) {
    std::fprintf(stderr, "archive_read_bench: %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr, "usage: archive_read_bench open ZIP | random ZIP SEQ [by-index] | floor ZIP SEQ\n");
  return 2;
}
