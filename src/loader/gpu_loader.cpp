// GpuLoader: a batch builder for the BatchQueue (the Loader's batching, order and bad-image
// rules) that decodes and transforms on the GPU. Each worker thread owns a CUDA stream, an nvJPEG
// decoder and its device buffers; a batch is complete (its stream synchronised) before the queue
// hands it out.
#include "frugal/loader/gpu_loader.h"

#include <atomic>
#include <functional>
#include <mutex>

#include "loader/batch_queue.h"
#include "frugal/loader/oom.h"
#include "frugal/image/augment.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/gpu/plan.h"

#if FRUGAL_WITH_NVJPEG
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "frugal/gpu/cuda_util.h"
#include "frugal/gpu/jpeg_decoder.h"
#include "frugal/gpu/resize_kernel.h"
#endif

namespace frugal {

DecodeSelection select_decode(const std::string& mode, const Dataset& dataset) {
  gpu::DecodeMode m = gpu::parse_decode_mode(mode);
  gpu::GpuAvailability g;
  if (m != gpu::DecodeMode::cpu) g = gpu::probe_gpu();
  gpu::DecodeChoice c = gpu::choose_decode(m, g, dataset.native_size() <= 64);
  return {c.gpu, c.reason};
}

#if FRUGAL_WITH_NVJPEG
namespace {

// What one worker thread keeps between batches.
struct Worker {
  std::optional<c10::cuda::CUDAStream> stream;
  std::unique_ptr<gpu::JpegDecoder> decoder;
  gpu::DeviceBuffer uploads, jobs;
  Image scratch, out;
};

// One sample on its way through build(): where its pixels come from and how they are cut.
struct Item {
  std::size_t idx = 0;
  std::uint64_t seed = 0;
  std::span<const std::uint8_t> jpeg;  // empty: decoded on the CPU
  std::vector<std::uint8_t> owned;     // deflated entries
  gpu::JobPlan plan;
  std::size_t upload = 0;  // offset of a CPU-transformed image in the upload buffer
  bool cpu = false;
};

// frugal_gpu's device memory (decode arena, uploads, nvJPEG's buffers) from PyTorch's caching
// allocator: capped by --gpu-memory with the rest, reused without cudaFree's device-wide stall.
void* torch_alloc(std::size_t bytes, cudaStream_t stream) {
  return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(bytes, stream);
}
void torch_free(void* p) { c10::cuda::CUDACachingAllocator::raw_delete(p); }

void release_device_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

}  // namespace

struct GpuLoader::State {
  std::shared_ptr<const Dataset> data;
  std::uint64_t seed = 0;
  GpuOutputOptions output;
  TransformOptions transform;

  std::mutex mu;  // backend and before_build
  std::string backend;
  std::function<void(std::int64_t)> before_build;
  std::atomic<bool> oom_noted{false};
  std::atomic<std::uint64_t> allocation_failures_noted{0};

  std::unique_ptr<BatchQueue> queue;  // last: its workers stop before the rest goes

  // Training holds most of the device: a batch that finds no memory is retried once after the
  // cache is freed, then built on the CPU, rather than failing the run from a worker thread.
  BuiltBatch build_or_fall_back(Worker& w, const BatchJob& job);
  // on_host: everything decoded on the CPU and the batch left in host memory, for when the GPU
  // has no memory to spare for it (TrainStep moves it, as it does the CPU Loader's).
  BuiltBatch build(Worker& w, std::int64_t epoch, const std::vector<std::size_t>& samples, bool on_host);
  void note_oom(const std::string& what);
  // build()'s steps: the samples' bytes and crops read on the CPU; the JPEGs decoded on the GPU;
  // the rest decoded and transformed on the CPU into `host`; the batch put together on the host or
  // on the device.
  std::vector<Item> read_items(std::int64_t epoch, const std::vector<std::size_t>& samples, bool on_host,
                               BuiltBatch& r) const;
  void decode_jpegs(Worker& w, std::vector<Item>& items, int channels);
  std::vector<Item> decode_rest(Worker& w, std::vector<Item>& items, std::vector<std::uint8_t>& host,
                                BuiltBatch& r) const;
  void host_batch(const std::vector<Item>& kept, std::vector<std::uint8_t>& host, BuiltBatch& r) const;
  void device_batch(Worker& w, const std::vector<Item>& kept, const std::vector<std::uint8_t>& host,
                    BuiltBatch& r) const;
};

void GpuLoader::State::note_oom(const std::string& what) {
  if (!oom_noted.exchange(true))
    note("out of GPU memory in the GPU loader (" + what + "): such batches are decoded on the CPU (said once)");
}

BuiltBatch GpuLoader::State::build(Worker& w, std::int64_t ep, const std::vector<std::size_t>& samples, bool on_host) {
  c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(output.device));
  if (!w.stream) w.stream = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(output.device));
  c10::cuda::CUDAStreamGuard stream_guard(*w.stream);
  if (!w.decoder && !on_host) {
    w.decoder = std::make_unique<gpu::JpegDecoder>(w.stream->stream());
    std::lock_guard<std::mutex> lock(mu);
    backend = w.decoder->backend();
  }
  BuiltBatch r;
  std::vector<Item> items = read_items(ep, samples, on_host, r);
  decode_jpegs(w, items, data->channels());
  std::vector<std::uint8_t> host;
  const std::vector<Item> kept = decode_rest(w, items, host, r);
  if (on_host)
    host_batch(kept, host, r);
  else
    device_batch(w, kept, host, r);
  return r;
}

// CPU side: bytes (CRC-checked by the dataset), header, and the crop drawn as the CPU loader draws
// it. A sample that cannot be read is counted bad (r) and left out.
std::vector<Item> GpuLoader::State::read_items(std::int64_t ep, const std::vector<std::size_t>& samples, bool on_host,
                                               BuiltBatch& r) const {
  const std::uint64_t epoch_seed = mix_seed(seed, static_cast<std::uint64_t>(ep));
  std::vector<Item> items;
  items.reserve(samples.size());
  for (std::size_t idx : samples) {
    ++r.seen;
    Item it;
    it.idx = idx;
    it.seed = mix_seed(epoch_seed, idx);
    it.cpu = true;
    try {
      if (auto bytes = data->file_bytes(idx, it.owned)) {  // none: a sample of an array member
        it.jpeg = *bytes;
        if (sniff_format(it.jpeg) == ImageFormat::jpeg) {
          ImageInfo info = read_image_info(it.jpeg, data->path().string() + ":" + data->name(idx),
                                           data->options().max_pixels, data->options().exif_orientation);
          // nvJPEG gives the stored pixels and the kernel cannot turn them: a photo with an EXIF
          // orientation other than 1 is decoded, turned and cropped on the CPU (cpu_decoded).
          if (auto p =
                  info.orientation == 1 ? gpu::plan_job(info.width, info.height, transform, it.seed) : std::nullopt) {
            it.plan = *p;
            it.cpu = false;
          }
        }
      }
    } catch (const Error& e) {
      if (!r.count_bad(*data, idx, e)) throw;
      continue;
    }
    if (on_host) it.cpu = true;
    if (it.cpu) it.jpeg = {};
    items.push_back(std::move(it));
  }
  return items;
}

// GPU decode of the JPEGs, each job pointed at its decoded pixels; what nvJPEG refuses joins the
// CPU list.
void GpuLoader::State::decode_jpegs(Worker& w, std::vector<Item>& items, int C) {
  std::vector<std::span<const std::uint8_t>> jpegs;
  std::vector<std::size_t> jpeg_item;
  for (std::size_t k = 0; k < items.size(); ++k)
    if (!items[k].cpu) {
      jpegs.push_back(items[k].jpeg);
      jpeg_item.push_back(k);
    }
  // An arena that cannot grow: free the cache and try again, then leave this batch to the CPU.
  std::vector<gpu::DeviceImage> none;
  bool decode_failed = false;
  using Decoded = std::vector<gpu::DeviceImage>;
  const Decoded& decoded = jpegs.empty() ? none
                                         : *retry_after_oom<const Decoded*>(
                                               [&] { return &w.decoder->decode(jpegs, C); }, release_device_cache,
                                               [&] {
                                                 none.assign(jpegs.size(), gpu::DeviceImage{});
                                                 return &none;
                                               },
                                               &decode_failed);
  if (decode_failed) note_oom("decode buffers");
  if (std::uint64_t f = w.decoder ? w.decoder->allocation_failures() : 0;
      f > 0 && allocation_failures_noted.exchange(f) == 0)
    note_oom("nvJPEG's buffers");
  for (std::size_t j = 0; j < jpegs.size(); ++j) {
    Item& it = items[jpeg_item[j]];
    const gpu::DeviceImage& d = decoded[j];
    gpu::ResizeJob& job = it.plan.job;
    // The plan came from TurboJPEG's reading of the header; a disagreement means the CPU decodes it.
    if (!d.ok || it.plan.view_x + job.view_w > d.width || it.plan.view_y + job.view_h > d.height) {
      it.cpu = true;
      continue;
    }
    job.src =
        d.data + static_cast<std::size_t>(it.plan.view_y) * d.pitch + static_cast<std::size_t>(it.plan.view_x) * C;
    job.pitch = d.pitch;
    job.channels = C;
  }
}

// CPU side of the rest: the CPU loader's own decode + transform, appended to `host` as S x S
// images. The items kept (those that decoded).
std::vector<Item> GpuLoader::State::decode_rest(Worker& w, std::vector<Item>& items, std::vector<std::uint8_t>& host,
                                                BuiltBatch& r) const {
  std::vector<Item> kept;
  kept.reserve(items.size());
  for (Item& it : items) {
    if (it.cpu) {
      try {
        data->load(it.idx, transform, it.seed, w.scratch, w.out);
      } catch (const Error& e) {
        if (!r.count_bad(*data, it.idx, e)) throw;
        continue;
      }
      it.upload = host.size();
      host.insert(host.end(), w.out.pixels.begin(), w.out.pixels.end());
      ++r.cpu_decoded;
    }
    kept.push_back(std::move(it));
  }
  return kept;
}

void GpuLoader::State::host_batch(const std::vector<Item>& kept, std::vector<std::uint8_t>& host, BuiltBatch& r) const {
  const int S = transform.image_size, C = data->channels();
  const auto n = static_cast<std::int64_t>(kept.size());
  r.labels = empty_labels(*data, n);
  for (std::size_t k = 0; k < kept.size(); ++k) {
    set_label(r.labels, static_cast<std::int64_t>(k), *data, kept[k].idx);
    r.samples.push_back(static_cast<std::int64_t>(kept[k].idx));
  }
  // (B, S, S, C) as transformed -> (B, C, S, S), as the kernel writes it; a copy (`host` dies after).
  r.images = torch::from_blob(host.data(), {n, S, S, C}, torch::kUInt8)
                 .permute({0, 3, 1, 2})
                 .clone(torch::MemoryFormat::Contiguous);
}

// The uploads and the decoded JPEGs cut and resized by the kernel into r.images on the device;
// complete (the stream synchronised) on return.
void GpuLoader::State::device_batch(Worker& w, const std::vector<Item>& kept, const std::vector<std::uint8_t>& host,
                                    BuiltBatch& r) const {
  const int S = transform.image_size, C = data->channels();
  cudaStream_t stream = w.stream->stream();
  const auto n = static_cast<std::int64_t>(kept.size());
  auto dev = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(output.device));
  r.images = torch::empty({n, C, S, S}, torch::TensorOptions().dtype(torch::kUInt8).device(dev));
  r.labels = empty_labels(*data, n);
  if (n == 0) return;
  auto* uploads = static_cast<std::uint8_t*>(w.uploads.reserve(std::max<std::size_t>(host.size(), 1), stream));
  if (!host.empty())
    gpu::check_cuda(cudaMemcpyAsync(uploads, host.data(), host.size(), cudaMemcpyHostToDevice, stream),
                    "cudaMemcpyAsync");
  std::vector<gpu::ResizeJob> jobs(kept.size());
  for (std::size_t k = 0; k < kept.size(); ++k) {
    jobs[k] = kept[k].cpu ? gpu::identity_job(uploads + kept[k].upload, S, C) : kept[k].plan.job;
    set_label(r.labels, static_cast<std::int64_t>(k), *data, kept[k].idx);
    r.samples.push_back(static_cast<std::int64_t>(kept[k].idx));
  }
  auto* dev_jobs = static_cast<gpu::ResizeJob*>(w.jobs.reserve(jobs.size() * sizeof(gpu::ResizeJob), stream));
  gpu::check_cuda(
      cudaMemcpyAsync(dev_jobs, jobs.data(), jobs.size() * sizeof(gpu::ResizeJob), cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync");
  // uint8 levels, as the CPU Loader's: TrainStep normalises both alike (normalize()).
  gpu::launch_resize(dev_jobs, static_cast<int>(n), S, C, gpu::OutputType::u8, gpu::Normalisation{},
                     r.images.data_ptr(), stream);
  // Decode buffers, uploads and jobs are reused by the next batch, and `host` dies after.
  gpu::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

BuiltBatch GpuLoader::State::build_or_fall_back(Worker& w, const BatchJob& job) {
  std::function<void(std::int64_t)> hook;
  {
    std::lock_guard<std::mutex> lock(mu);
    hook = before_build;
  }
  bool on_host = false;
  BuiltBatch r = retry_after_oom<BuiltBatch>(
      [&] {
        if (hook) hook(job.index);
        return build(w, job.epoch, job.samples, false);
      },
      release_device_cache, [&] { return build(w, job.epoch, job.samples, true); }, &on_host);
  if (on_host) note_oom("batch " + std::to_string(job.index));
  return r;
}

GpuLoader::GpuLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, GpuOutputOptions output)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (!dataset) fail(ErrorKind::usage, "GpuLoader", "a dataset", "none", "");
  options = checked_loader_options("GpuLoader", options);
  // The kernel crops, resizes and flips (or not: --augment none); no other op runs on this path.
  if (options.train && options.augment.has_ops())
    fail(ErrorKind::usage, "GpuLoader", "{augment} none or flip, and no {random_erasing}",
         "{augment} " + augment_text(options.augment) + (options.augment.erasing > 0 ? " with random erasing" : ""),
         "decode on the CPU (the Loader, {decode} cpu): the GPU decode path only crops, resizes and flips");
  select_decode("gpu", *dataset);  // throws, naming what is missing
  // PyTorch sets up its CUDA caching allocator at the first CUDA tensor; nvJPEG's buffers may be
  // asked of it before any ("Allocator not initialized for device", seen on an H200).
  at::globalContext().lazyInitDevice(at::kCUDA);
  gpu::set_device_allocator({torch_alloc, torch_free});
  s.data = dataset;
  s.seed = options.seed;
  s.output = std::move(output);
  s.transform.image_size = options.image_size;
  s.transform.train = options.train;
  s.transform.augment = options.augment;
  s.transform.small = false;  // select_decode refused small images
  s.queue = std::make_unique<BatchQueue>("GpuLoader", std::move(dataset), options, [&s]() -> BuildBatch {
    // Dies with the worker's thread, after its last batch.
    auto w = std::make_shared<Worker>();
    return [&s, w](const BatchJob& job) { return s.build_or_fall_back(*w, job); };
  });
}

GpuLoader::~GpuLoader() = default;

void GpuLoader::start(std::int64_t epoch, std::int64_t position) { state_->queue->start(epoch, position); }

std::optional<Batch> GpuLoader::next() {
  auto b = state_->queue->next_batch();
  // The batch was made on a worker's stream; the caller's stream now uses it, so the caching
  // allocator must not hand its memory back to the worker's stream before the caller is done.
  if (b && b->images.is_cuda() && b->images.numel() > 0)
    c10::cuda::CUDACachingAllocator::recordStream(b->images.storage().data_ptr(),
                                                  c10::cuda::getCurrentCUDAStream(b->images.device().index()));
  return b;
}

std::int64_t GpuLoader::batches_per_epoch() const { return state_->queue->batches_per_epoch(); }
std::uint64_t GpuLoader::samples_seen() const { return state_->queue->samples_seen(); }
std::uint64_t GpuLoader::samples_bad() const { return state_->queue->samples_bad(); }
std::uint64_t GpuLoader::cpu_decoded() const { return state_->queue->cpu_decoded(); }

std::string GpuLoader::backend() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->backend;
}

void GpuLoader::set_before_build(std::function<void(std::int64_t)> hook) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->before_build = std::move(hook);
}

#else  // no nvJPEG in this build: the constructor explains, nothing else is reachable

struct GpuLoader::State {};

GpuLoader::GpuLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions, GpuOutputOptions) {
  if (!dataset) fail(ErrorKind::usage, "GpuLoader", "a dataset", "none", "");
  select_decode("gpu", *dataset);
  fail(ErrorKind::usage, "{decode} gpu", "a build with nvJPEG", "none", "see docs/gpu.md");
}
GpuLoader::~GpuLoader() = default;
void GpuLoader::start(std::int64_t, std::int64_t) {}
std::optional<Batch> GpuLoader::next() { return std::nullopt; }
std::int64_t GpuLoader::batches_per_epoch() const { return 0; }
std::uint64_t GpuLoader::samples_seen() const { return 0; }
std::uint64_t GpuLoader::samples_bad() const { return 0; }
std::uint64_t GpuLoader::cpu_decoded() const { return 0; }
std::string GpuLoader::backend() const { return ""; }
void GpuLoader::set_before_build(std::function<void(std::int64_t)>) {}

#endif

}  // namespace frugal
