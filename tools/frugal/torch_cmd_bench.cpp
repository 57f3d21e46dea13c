// frugal bench loader ARCHIVE [--image-size S] [--workers N] [--seconds T] [--batch-size B] [--decode cpu|gpu|auto]
//                     [--max-pixels N] [--max-file-bytes SIZE] [--max-bad-fraction F] [--json]
//
// The input pipeline alone (read + decode + augment, train transforms), in images/s. Like the
// recipe's Python baseline, the clock starts after the first batch, so thread start-up and the
// first fill of the prefetch queue are not counted.
#include <chrono>
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/loader/gpu_loader.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"

namespace frugal::cli {
namespace {

struct BenchArgs {
  std::string archive;
  LoaderOptions lo;
  double seconds = 20;
  bool json = false;
  DatasetOptions dopt;
  std::string decode = "auto";
};

void add_bench_options(CLI::App& app, BenchArgs& a) {
  LoaderOptions& lo = a.lo;
  DatasetOptions& dopt = a.dopt;
  app.add_option("ARCHIVE", a.archive, "the data: zip, split set, folder, tar, shard pattern, DATA:SUB/ (docs/data.md)")
      ->required();
  app.add_option("--image-size", lo.image_size, "output side in pixels")->capture_default_str()->check(at_least(1));
  app.add_option("--workers", lo.workers, "decode threads")->capture_default_str()->check(integer_in(1, kMaxWorkers));
  app.add_option("--seconds", a.seconds, "how long to measure")->capture_default_str()->check(number_at_least(0, true));
  app.add_option("--batch-size", lo.batch_size, "images per batch")->capture_default_str()->check(at_least(1));
  app.add_option("--label-pattern", dopt.label_pattern,
                 "RE2 regex with one capture group, the class: searched for in the file name, else in the path "
                 "inside the data (e.g. '([a-z]+)\\.[0-9]+\\.jpg$' for train/cat.0.jpg)");
  app.add_option("--max-pixels", dopt.max_pixels, "larger images count as undecodable (decompression bombs)")
      ->capture_default_str()
      ->check(at_least(1));
  app.add_option("--max-bad-fraction", dopt.max_bad_fraction,
                 "stop when more than this fraction of images is undecodable")
      ->capture_default_str()
      ->check(number_in(0, 1));
  add_max_file_bytes_option(app, dopt.max_file_bytes, "skipped and counted, as an empty file is");
  app.add_option("--channels", dopt.channels, "1 or 3 (default: as the data)")->check(one_of({"1", "3"}));
  app.add_option("--decode", a.decode, "cpu, gpu (nvJPEG + CUDA kernel) or auto (gpu when usable)")
      ->capture_default_str()
      ->check(one_of({"cpu", "gpu", "auto"}));
  app.add_flag("--json", a.json, "one JSON document on stdout");
  add_data_options(app, dopt);
  add_label_options(app, dopt);
  add_exclude_option(app, dopt);
}

// The loader being measured: the CPU's or the GPU's (--decode).
struct BenchLoader {
  std::unique_ptr<Loader> cpu;
  std::unique_ptr<GpuLoader> gpu;
  void start(std::int64_t epoch) { gpu ? gpu->start(epoch) : cpu->start(epoch); }
  auto next() { return gpu ? gpu->next() : cpu->next(); }
};

struct BenchCount {
  std::uint64_t images = 0;
  double elapsed = 0;
};

// Epochs until `seconds` have passed, the clock started after the first batch.
BenchCount measure(BenchLoader& loader, double seconds, const std::string& archive) {
  using clock = std::chrono::steady_clock;
  clock::time_point t0;
  bool started = false;
  BenchCount c;
  for (std::int64_t epoch = 0; c.elapsed <= seconds; ++epoch) {
    loader.start(epoch);
    bool any = false;
    while (auto b = loader.next()) {
      any = true;
      if (!started) {  // skip start-up and the first batch, as the baseline does
        started = true;
        t0 = clock::now();
        continue;
      }
      c.images += static_cast<std::uint64_t>(b->images.size(0));
      c.elapsed = std::chrono::duration<double>(clock::now() - t0).count();
      if (c.elapsed > seconds) break;
    }
    if (!any) fail(ErrorKind::invalid, archive, "images to load", "none", "");
  }
  return c;
}

void print_bench(const BenchArgs& a, const Dataset& ds, const BenchLoader& loader, const BenchCount& c) {
  const LoaderOptions& lo = a.lo;
  double rate = c.elapsed > 0 ? c.images / c.elapsed : 0;
  SkipReport skipped = ds.skipped();
  if (a.json) {
    print_json({{"images_per_s", rate},
                {"images", c.images},
                {"seconds", c.elapsed},
                {"workers", lo.workers},
                {"image_size", lo.image_size},
                {"batch_size", lo.batch_size},
                {"dataset_size", ds.size()},
                {"classes", ds.classes().size()},  // the tags of multi-label data
                {"multi_label", ds.multi_label()},
                {"channels", ds.channels()},
                {"skipped", skipped.total()},
                {"decode", loader.gpu ? "gpu" : "cpu"},
                {"decode_backend", loader.gpu ? loader.gpu->backend() : std::string("turbojpeg")},
                {"cpu_decoded", loader.gpu ? loader.gpu->cpu_decoded() : c.images}});
  } else {
    std::printf("%.1f images/s (%llu images in %.1f s, %d workers, %d px, %zu samples; skipped: %s)\n", rate,
                static_cast<unsigned long long>(c.images), c.elapsed, lo.workers, lo.image_size, ds.size(),
                printable(skipped.summary()).c_str());
  }
}

int bench_loader(int argc, char** argv) {
  CLI::App app("Measure the input pipeline alone (read + decode + augment) in images/s", "bench loader");
  BenchArgs a;
  add_bench_options(app, a);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(a.json);

  auto ds = Dataset::open(a.archive, a.dopt);
  DecodeSelection sel = select_decode(a.decode, *ds);
  note("decode: " + sel.reason);
  BenchLoader loader;
  if (sel.gpu)
    loader.gpu = std::make_unique<GpuLoader>(ds, a.lo);
  else
    loader.cpu = std::make_unique<Loader>(ds, a.lo);
  const BenchCount c = measure(loader, a.seconds, a.archive);
  print_bench(a, *ds, loader, c);
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "loader") {
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
      std::printf(
          "frugal bench loader ARCHIVE [--image-size S] [--workers N] [--seconds T] [--batch-size B] [--decode "
          "cpu|gpu|auto] [--json]\n");
      return 0;
    }
    std::fprintf(stderr, "frugal bench: expected a sub-command (loader), found %s\n", argc >= 2 ? argv[1] : "none");
    return 2;
  }
  return bench_loader(argc - 1, argv + 1);
}

}  // namespace frugal::cli
