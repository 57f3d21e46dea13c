// Baseline for bench/loader.sh: full-size TurboJPEG decoding (default DCT, RGB) of an archive's
// JPEGs with N threads, nothing else. frugal's loader (decode + crop + resize + flip) is held to
// at least 0.8 of this rate.
//
// Usage: tj_full_decode ARCHIVE [--workers N] [--seconds T]   -> one JSON line {"images_per_s", ...}
#include <turbojpeg.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/image/image.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tj_full_decode ARCHIVE [--workers N] [--seconds T]\n");
    return 2;
  }
  int workers = 2;
  double seconds = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
  }
  auto archive = frugal::Archive::open(argv[1]);
  std::vector<std::size_t> jpegs;
  for (std::size_t i = 0; i < archive->entries().size(); ++i) {
    if (archive->entries()[i].is_dir) continue;
    auto bytes = archive->read(i);
    if (frugal::sniff_format(bytes) == frugal::ImageFormat::jpeg) jpegs.push_back(i);
  }
  if (jpegs.empty()) {
    std::fprintf(stderr, "tj_full_decode: no JPEG in %s\n", argv[1]);
    return 3;
  }
  using clock = std::chrono::steady_clock;
  std::atomic<std::uint64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    tjhandle h = tjInitDecompress();
    std::vector<std::uint8_t> buf, rgb;
    while (!stop) {
      std::size_t e = jpegs[next++ % jpegs.size()];
      // The same read path the loader has: a view when stored, else inflated.
      std::span<const std::uint8_t> bytes;
      if (auto v = archive->stored_view(e)) {
        bytes = *v;
      } else {
        archive->read(e, buf);
        bytes = buf;
      }
      int w, hh, ss, cs;
      if (tjDecompressHeader3(h, bytes.data(), bytes.size(), &w, &hh, &ss, &cs) != 0) continue;
      bool cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
      rgb.resize(static_cast<std::size_t>(w) * hh * (cmyk ? 4 : 3));
      tjDecompress2(h, bytes.data(), bytes.size(), rgb.data(), w, 0, hh, cmyk ? TJPF_CMYK : TJPF_RGB, 0);
      ++done;
    }
    tjDestroy(h);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(work);
  // Warm-up (thread start, page cache) as long as the loader's skipped first batch, roughly.
  while (done < 64 * static_cast<std::uint64_t>(workers)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::uint64_t d0 = done;
  auto t0 = clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  std::uint64_t d1 = done;
  double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  std::printf("{\"images_per_s\": %.2f, \"images\": %llu, \"seconds\": %.3f, \"workers\": %d}\n", (d1 - d0) / elapsed,
              static_cast<unsigned long long>(d1 - d0), elapsed, workers);
  return 0;
}
