// Measures frugal's zip reader for bench/verify.sh (no frugal debug sub-command needed):
//   archive_read_bench open ZIP            best-of-3 seconds to open (parse the central directory)
//   archive_read_bench random ZIP N SEED   seconds for N random single-entry reads, CRC-checked,
//                                          on one thread, after opening once
// Prints one JSON line.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "frugal/archive.h"
#include "frugal/error.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: archive_read_bench open ZIP | random ZIP N SEED\n");
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
    if (mode == "random" && argc >= 5) {
      const long reads = std::atol(argv[3]);
      auto a = frugal::Archive::open(path);
      std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
      std::uniform_int_distribution<std::size_t> pick(0, a->entries().size() - 1);
      std::vector<std::uint8_t> buf;
      std::uint64_t bytes = 0;
      auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      for (long i = 0; i < reads; ++i) {
        a->read(pick(rng), buf);  // inflates and checks size and CRC-32
        bytes += buf.size();
      }
      const double wall = seconds_since(t0), cpu = cpu_seconds() - c0;
      std::printf("{\"reads\": %ld, \"bytes\": %llu, \"seconds\": %.4f, \"cpu_seconds\": %.4f}\n", reads,
                  static_cast<unsigned long long>(bytes), wall, cpu);
      return 0;
    }
  } catch (const frugal::Error& e) {
    std::fprintf(stderr, "archive_read_bench: %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr, "usage: archive_read_bench open ZIP | random ZIP N SEED\n");
  return 2;
}
