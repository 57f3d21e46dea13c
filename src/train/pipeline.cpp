// Pipeline stages (see pipeline.h).
#include "train/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <utility>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/loader/oom.h"
#include "frugal/image/image.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "train/device.h"

namespace frugal {

std::vector<std::size_t> balance_stages(const std::vector<double>& cost, int stages) {
  const std::size_t n = cost.size(), k = static_cast<std::size_t>(stages);
  if (k == 0 || n < k) return {};
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  // best[j][i]: the smallest largest stage over pieces [0, i) cut into j stages; from[j][i] where
  // the last of them begins.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> from(k + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t j = 1; j <= k; ++j)
    for (std::size_t i = j; i <= n; ++i)
      for (std::size_t b = j - 1; b < i; ++b) {
        const double v = std::max(best[j - 1][b], prefix[i] - prefix[b]);
        if (v < best[j][i]) {
          best[j][i] = v;
          from[j][i] = b;
        }
      }
  std::vector<std::size_t> begins(k);
  std::size_t i = n;
  for (std::size_t j = k; j >= 1; --j) {
    begins[j - 1] = from[j][i];
    i = from[j][i];
  }
  return begins;
}

std::vector<std::size_t> stages_at(const std::vector<ModelPiece>& pieces, const std::vector<std::string>& names,
                                   int stages) {
  std::string list;
  for (const auto& p : pieces) list += (list.empty() ? "" : ", ") + p.name;
  if (static_cast<int>(names.size()) != stages - 1)
    fail(ErrorKind::usage, "{pipeline_split}",
         std::to_string(stages - 1) + " piece names for {pipeline} " + std::to_string(stages) + " (where stages 1.." +
             std::to_string(stages - 1) + " begin)",
         std::to_string(names.size()) + " names", "the model's pieces, in order: " + list);
  std::vector<std::size_t> begins{0};
  for (const auto& name : names) {
    auto it = std::find_if(pieces.begin(), pieces.end(), [&](const ModelPiece& p) { return p.name == name; });
    if (it == pieces.end())
      fail(ErrorKind::usage, "{pipeline_split} " + name, "a piece of the model", "no piece of that name",
           "the model's pieces, in order: " + list);
    const auto at = static_cast<std::size_t>(it - pieces.begin());
    if (at <= begins.back())
      fail(ErrorKind::usage, "{pipeline_split} " + name, "pieces in the model's order, after its first", "out of order",
           "the model's pieces, in order: " + list);
    begins.push_back(at);
  }
  return begins;
}

std::vector<std::pair<char, int>> one_f_one_b(int stage, int stages, int micro_batches) {
  std::vector<std::pair<char, int>> order;
  const int warm = std::min(micro_batches, stages - 1 - stage);
  int f = 0, b = 0;
  while (f < warm) order.emplace_back('F', f++);
  while (f < micro_batches) {
    order.emplace_back('F', f++);
    order.emplace_back('B', b++);
  }
  while (b < micro_batches) order.emplace_back('B', b++);
  return order;
}

namespace {

constexpr int kActivationTag = 1, kGradientTag = 2, kPlanTag = 3, kGatherTag = 4;
constexpr std::int64_t kHeader = 12;  // dtype, channels-last, rank, up to 9 sizes

// One message: a header that says the tensor's dtype, layout and shape, then its elements. A
// channels-last tensor travels as its NHWC memory (a dense permutation, no copy), so that the next
// stage computes on the layout the previous one produced, as one process would.
void send_tensor(ProcessGroup& g, const torch::Tensor& t, int dst, int tag) {
  const bool cl = t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(torch::MemoryFormat::ChannelsLast);
  if (t.dim() > kHeader - 3)
    fail(ErrorKind::unsupported, "a pipeline activation of " + std::to_string(t.dim()) + " dimensions",
         "at most " + std::to_string(kHeader - 3), "more", "");
  auto header = torch::zeros({kHeader}, torch::kInt64);
  auto h = header.accessor<std::int64_t, 1>();
  h[0] = static_cast<std::int64_t>(t.scalar_type());
  h[1] = cl ? 1 : 0;
  h[2] = t.dim();
  for (std::int64_t d = 0; d < t.dim(); ++d) h[3 + d] = t.size(d);
  g.send(header.to(t.device()), dst, tag * 2);
  g.send(cl ? t.permute({0, 2, 3, 1}) : t.contiguous(), dst, tag * 2 + 1);
}

torch::Tensor recv_tensor(ProcessGroup& g, const torch::Device& device, int src, int tag) {
  auto header = torch::zeros({kHeader}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  g.recv(header, src, tag * 2);
  header = header.cpu();
  auto h = header.accessor<std::int64_t, 1>();
  // From another rank of this run, but checked before it sizes anything: a header that is not one
  // (a peer out of step) is an I/O error naming it, not a read past the header.
  if (h[2] < 0 || h[2] > kHeader - 3 || h[0] < 0 || h[0] >= static_cast<std::int64_t>(c10::ScalarType::NumOptions) ||
      (h[1] == 1 && h[2] != 4))
    fail(ErrorKind::io, "rank " + std::to_string(src), "a pipeline tensor's header", "another message",
         "another rank is out of step; run the same command again to resume from the last checkpoint");
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(h[2]));
  for (std::size_t d = 0; d < sizes.size(); ++d) sizes[d] = h[3 + static_cast<std::int64_t>(d)];
  const auto dtype = static_cast<c10::ScalarType>(h[0]);
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  if (h[1] == 1) {
    auto nhwc = torch::empty({sizes[0], sizes[2], sizes[3], sizes[1]}, options);
    g.recv(nhwc, src, tag * 2 + 1);
    return nhwc.permute({0, 3, 1, 2});
  }
  auto t = torch::empty(sizes, options);
  g.recv(t, src, tag * 2 + 1);
  return t;
}

// Which of the model's tensors a stage holds: those under its pieces' module names.
struct Stage {
  int index = 0, count = 1;
  int prev = -1, next = -1;        // the ranks of the stages before and after this one (same replica)
  int first_rank = 0;              // the rank of this replica's first stage
  std::size_t begin = 0, end = 0;  // pieces
  std::set<std::string> modules;
  // The modules of pieces [b, e).
  static std::set<std::string> modules_of(const std::vector<ModelPiece>& pieces, std::size_t b, std::size_t e) {
    std::set<std::string> out;
    for (std::size_t i = b; i < e; ++i) out.insert(pieces[i].modules.begin(), pieces[i].modules.end());
    return out;
  }
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
  bool holds(const std::string& tensor) const {
    for (const auto& m : modules)
      if (tensor.size() > m.size() && tensor.compare(0, m.size(), m) == 0 && tensor[m.size()] == '.') return true;
    return false;
  }
};

// The first stage's plan (of a step, or of an evaluation batch: int64 values) to the other stages
// of its replica, which read no image and take their sizes and labels from it.
void send_plan(ProcessGroup& g, const Stage& stage, const torch::Tensor& plan, const torch::Device& device) {
  const auto message = plan.to(device);
  for (int s = 1; s < stage.count; ++s) send_tensor(g, message, stage.first_rank + s, kPlanTag);
}

[[noreturn]] void plan_out_of_step(const Stage& stage, const std::string& what) {
  fail(ErrorKind::io, "rank " + std::to_string(stage.first_rank), "a pipeline " + what + "'s plan", "another message",
       "another rank is out of step; run the same command again to resume from the last checkpoint");
}

// The plan on a later stage, on the CPU: checked to be what send_plan sends (1-D int64, not
// empty) before its values size anything.
torch::Tensor recv_plan(ProcessGroup& g, const Stage& stage, const torch::Device& device, const std::string& what) {
  auto plan = recv_tensor(g, device, stage.first_rank, kPlanTag).cpu();
  if (plan.scalar_type() != torch::kInt64 || plan.dim() != 1 || plan.numel() < 1) plan_out_of_step(stage, what);
  return plan;
}

// A batch's labels in a plan: width 0, one class index per sample; a multi-label batch's width is
// its classes, each sample's 0/1 targets.
std::int64_t label_width(const torch::Tensor& labels) { return labels.dim() == 2 ? labels.size(1) : 0; }
std::int64_t values_per_sample(std::int64_t width) { return std::max<std::int64_t>(width, 1); }
torch::Tensor labels_of(const torch::Tensor& values, std::int64_t width) {
  return width == 0 ? values : values.reshape({-1, width}).to(torch::kFloat32);
}

// Seconds of a stage's steps: the schedule's (forwards, backwards, sends and receives), of which
// waiting in receives (for the other stages: the bubble, and the transfer) and waiting for sends
// to finish. CPU clocks: on CUDA they time what the CPU waited, not the kernels. Filled by the
// stage's step, taken by the epoch's metrics (PipelineParallel::epoch_figures).
struct StageFigures {
  double schedule = 0, receiving = 0, sending = 0;
  std::int64_t steps = 0;
};

// The step of one stage: its micro-batches' forwards and backwards in 1F1B order, then one
// all-reduce over the stages of the loss, of whether any gradient was inf/NaN (a skipped step is
// skipped on every stage) and of the gradients' squared norm (clipping by the global norm), then
// the optimizer step on this stage's parameters (the others have no gradient, so it skips them).
class PipelineStep : public TrainStep {
 public:
  // `replicas`: the group of this stage's data-parallel replicas, which sum its gradients (null:
  // one pipeline); `replica0`: whether this is the first replica (which adds to the global norm);
  // `figures`: where its seconds add up.
  PipelineStep(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler, const StepOptions& options,
               ProcessGroup& group, ProcessGroup* replicas, bool replica0, const Stage& stage,
               std::vector<torch::Tensor> params, std::shared_ptr<StageFigures> figures)
      : TrainStep(model, optimizer, scaler, options),
        g_(group),
        replicas_(replicas),
        replica0_(replica0),
        figures_(std::move(figures)),
        stage_(stage),
        params_(std::move(params)) {}

  StepResult run(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
                 std::int64_t global_samples) override {
    try {
      return attempt_pipeline(batches, global_samples);
    } catch (const c10::Error& e) {
      // Halving the micro-batch on one stage alone would leave the others waiting for sends that
      // never come; a budget error names what to change instead.
      if (!is_out_of_memory(e)) throw;
      fail(ErrorKind::budget, "GPU memory", "room for a micro-batch of " + std::to_string(options_.micro_batch),
           "out of memory on pipeline stage " + std::to_string(stage_.index),
           "run the same command again with more {micro_batches} (smaller ones: the same global batch; it resumes "
           "from the last checkpoint), {grad_checkpoint} or more {pipeline} stages");
    }
  }

 private:
  struct Slot {
    torch::Tensor input, output, loss;
  };
  // One micro-batch as this stage sees it: the first stage's images, the last stage's labels (on
  // the device), and its size on every stage.
  struct Micro {
    torch::Tensor images, labels;
    std::int64_t size = 0;
  };

  // The first stage cuts its batches into micro-batches of options_.micro_batch and sends the
  // step's plan, [count, each size, label width, every label], to the other stages of its replica
  // (a multi-label sample's label is its row of 0/1 targets, `width` long): they load no
  // image (their loader reads labels only: Parallelism::reads_images), and a batch that lost
  // undecodable images on the first stage is the same size on every stage.
  std::vector<Micro> micro_batches(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches) {
    std::vector<Micro> out;
    if (stage_.first()) {
      std::vector<std::int64_t> plan{0};
      std::vector<torch::Tensor> labels;
      std::int64_t width = 1;
      for (const auto& [images, l] : batches)
        for (std::int64_t start = 0; start < images.size(0); start += options_.micro_batch) {
          const std::int64_t end = std::min(start + options_.micro_batch, images.size(0));
          out.push_back({images.slice(0, start, end), l.slice(0, start, end), end - start});
          plan.push_back(end - start);
          width = label_width(l);
          labels.push_back(out.back().labels.to(torch::kInt64).reshape({-1}));
        }
      plan[0] = static_cast<std::int64_t>(out.size());
      plan.push_back(width);
      labels.insert(labels.begin(), torch::tensor(plan, torch::kInt64));
      send_plan(g_, stage_, torch::cat(labels), options_.device);
      return out;
    }
    const auto message = recv_plan(g_, stage_, options_.device, "step");
    const std::int64_t n = message.numel();
    const auto* p = message.data_ptr<std::int64_t>();
    if (p[0] < 0 || p[0] > n - 2) plan_out_of_step(stage_, "step");
    const std::int64_t width = p[1 + p[0]];
    if (width < 0 || width > n) plan_out_of_step(stage_, "step");
    const std::int64_t per = values_per_sample(width);
    std::int64_t at = 2 + p[0];
    for (std::int64_t i = 0; i < p[0]; ++i) {
      if (p[1 + i] < 1 || p[1 + i] > (n - at) / per) plan_out_of_step(stage_, "step");
      out.push_back({torch::Tensor(), labels_of(message.slice(0, at, at + p[1 + i] * per), width), p[1 + i]});
      at += p[1 + i] * per;
    }
    return out;
  }

  StepResult attempt_pipeline(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
                              std::int64_t global_samples) {
    const auto micro = micro_batches(batches);
    std::int64_t local = 0;
    for (const auto& m : micro) local += m.size;
    const std::int64_t total = global_samples > 0 ? global_samples : local;
    if (replicas_)
      replicas_->prepare_gradients(params_);  // backward accumulates into the all-reduce's buckets
    else
      optimizer_.zero_grad(/*set_to_none=*/true);
    auto loss_sum = torch::zeros({}, torch::TensorOptions().device(options_.device));
    auto correct = torch::zeros({}, torch::TensorOptions().device(options_.device));  // top-1, at the last stage
    std::vector<Slot> slots(micro.size());
    const auto started = Clock::now();
    auto receive = [&](int from, int tag) {
      const auto t0 = Clock::now();
      auto t = recv_tensor(g_, options_.device, from, tag);
      figures_->receiving += since(t0);
      return t;
    };
    for (const auto& [what, i] : one_f_one_b(stage_.index, stage_.count, static_cast<int>(micro.size()))) {
      Slot& s = slots[static_cast<std::size_t>(i)];
      const Micro& m = micro[static_cast<std::size_t>(i)];
      if (what == 'F') {
        if (before_micro_step) before_micro_step(micro_steps_);
        ++micro_steps_;
        s.input =
            stage_.first() ? prepare_batch(m.images, options_) : receive(stage_.prev, kActivationTag).requires_grad_();
        AutocastGuard autocast(options_.device.type(), options_.amp);
        s.output = model_.run_pieces(s.input, stage_.begin, stage_.end);
        if (stage_.last())
          last_stage_loss(s, m, total, loss_sum, correct);
        else
          send_tensor(g_, s.output.detach(), stage_.next, kActivationTag);
      } else {
        if (stage_.last()) {
          s.loss.backward();
        } else {
          auto grad = receive(stage_.next, kGradientTag);
          // A stage frozen through (--freeze) up to here has nothing to backpropagate into.
          if (s.output.requires_grad()) torch::autograd::backward({s.output}, {grad});
        }
        if (!stage_.first())
          send_tensor(g_, s.input.grad().defined() ? s.input.grad() : torch::zeros_like(s.input), stage_.prev,
                      kGradientTag);
        s = Slot{};  // this micro-batch's activations are freed
      }
    }
    const auto sent = Clock::now();
    g_.wait_sends();
    figures_->sending += since(sent);
    figures_->schedule += since(started);
    ++figures_->steps;
    if (replicas_) replicas_->all_reduce_gradients(params_, {});
    StepResult result = finish_step(loss_sum, correct, total);
    // Every stage has the labels: each knows whether top-1 was counted (not for multi-label tags).
    for (const Micro& m : micro)
      if (m.labels.dim() != 1) result.correct = -1;
    return result;
  }

  // The last stage's loss of micro-batch `m` (its output in `s`), weighted by its share of the
  // step's `total` samples; its sum and top-1 count added to the step's.
  void last_stage_loss(Slot& s, const Micro& m, std::int64_t total, torch::Tensor& loss_sum, torch::Tensor& correct) {
    auto y = m.labels.to(options_.device, /*non_blocking=*/true);
    auto loss = classification_loss(s.output.to(torch::kFloat32), y, options_.label_smoothing, options_.class_weights);
    const double share = static_cast<double>(m.size) / static_cast<double>(total);
    s.loss = scaler_.scale(loss * share);
    loss_sum += loss.detach() * static_cast<double>(m.size);
    if (y.dim() == 1) correct += s.output.detach().argmax(1).eq(y).sum();
  }

  StepResult finish_step(const torch::Tensor& loss_sum, const torch::Tensor& correct, std::int64_t total) {
    const bool finite_here = scaler_.unscale(params_);
    auto square = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(options_.device));
    if (options_.clip_grad_norm > 0 && replica0_)  // the replicas hold the same (summed) gradients
      for (const auto& p : params_)
        if (p.grad().defined()) square += p.grad().to(torch::kFloat32).pow(2).sum();
    auto agreed =
        torch::stack({loss_sum.to(torch::kFloat32), torch::full({}, finite_here ? 0.0F : 1.0F, square.options()),
                      square, correct.to(torch::kFloat32)});
    std::vector<torch::Tensor> one{agreed};
    g_.all_reduce_sum(one);
    agreed = one[0].cpu();
    const auto a = agreed.accessor<float, 1>();
    const bool finite = a[1] == 0;
    if (!finite) scaler_.found_inf_elsewhere();
    if (finite) {
      if (options_.clip_grad_norm > 0) {
        // torch.nn.utils.clip_grad_norm_'s rule, over every stage's gradients.
        const double coef = options_.clip_grad_norm / (std::sqrt(static_cast<double>(a[2])) + 1e-6);
        if (coef < 1) {
          torch::NoGradGuard no_grad;
          for (auto& p : params_)
            if (p.grad().defined()) p.mutable_grad().mul_(coef);
        }
      }
      if (before_optimizer_step) before_optimizer_step();
      optimizer_.step();
    }
    scaler_.update();
    StepResult result;
    result.samples = total;
    result.skipped = !finite;
    result.loss = static_cast<double>(a[0]) / static_cast<double>(total);
    result.correct = std::llround(static_cast<double>(a[3]));
    return result;
  }

  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  ProcessGroup& g_;
  ProcessGroup* replicas_;
  bool replica0_;
  std::shared_ptr<StageFigures> figures_;
  Stage stage_;
  std::vector<torch::Tensor> params_;
};

// What evaluate() runs on a stage: its pieces of the forward, the activations through the stages;
// the last stage returns the logits, the others zeros of the same shape (their counts are replaced
// by the last stage's: PipelineParallel::for_evaluation).
class StageForward : public Model {
 public:
  StageForward(Model& model, ProcessGroup& group, const Stage& stage, std::int64_t classes)
      : model_(model), g_(group), stage_(stage), classes_(classes) {}

  torch::Tensor forward(torch::Tensor x) override {
    const torch::Device device = x.device();
    if (!stage_.first()) x = recv_tensor(g_, device, stage_.prev, kActivationTag);
    auto out = model_.run_pieces(x, stage_.begin, stage_.end);
    if (stage_.last()) return out;
    send_tensor(g_, out, stage_.next, kActivationTag);
    g_.wait_sends();
    return torch::zeros({x.size(0), classes_}, torch::TensorOptions().device(device));
  }
  void train(bool on) override {
    torch::nn::Module::train(on);
    model_.train(on);
  }
  std::string head_prefix() const override { return model_.head_prefix(); }

 private:
  Model& model_;
  ProcessGroup& g_;
  Stage stage_;
  std::int64_t classes_;
};

// What evaluate() reads on a stage. On the first: its validation loader's batches, each one's
// labels sent to the other stages of its replica as a plan [n, labels...] ([-1] after the last
// batch). On the others: the batches of those plans, the first stage's labels with, for images,
// (n, 1, 1, 1) zeros that only say how many (StageForward takes its input from the stage before).
// So only the first stage decodes, and a batch that lost an undecodable image there is the same
// batch on every stage.
class PlannedBatches : public BatchSource {
 public:
  PlannedBatches(ProcessGroup& group, const Stage& stage, BatchSource& own, const torch::Device& device)
      : g_(group), stage_(stage), own_(own), device_(device) {}

  void start(std::int64_t epoch, std::int64_t position) override {
    if (stage_.first()) own_.start(epoch, position);
  }
  std::optional<Batch> next() override {
    if (stage_.first()) {
      auto b = own_.next();
      send_plan(g_, stage_,
                b ? torch::cat({torch::tensor({b->labels.size(0), label_width(b->labels)}, torch::kInt64),
                                b->labels.to(torch::kInt64).reshape({-1})})
                  : torch::full({1}, -1, torch::kInt64),
                device_);
      g_.wait_sends();
      return b;
    }
    const auto plan = recv_plan(g_, stage_, device_, "evaluation batch");
    const std::int64_t n = plan[0].item<std::int64_t>();
    if (n == -1 && plan.numel() == 1) return std::nullopt;
    const std::int64_t width = plan.numel() >= 2 ? plan[1].item<std::int64_t>() : -1;
    const std::int64_t per = values_per_sample(width);
    if (n < 0 || width < 0 || width > plan.numel() || n > (plan.numel() - 2) / per || n * per != plan.numel() - 2)
      plan_out_of_step(stage_, "evaluation batch");
    Batch b;
    b.images = torch::zeros({n, 1, 1, 1}, torch::kUInt8);
    b.labels = labels_of(plan.slice(0, 2), width);
    return b;
  }
  std::int64_t batches_per_epoch() const override { return own_.batches_per_epoch(); }
  std::uint64_t samples_seen() const override { return stage_.first() ? own_.samples_seen() : 0; }
  std::uint64_t samples_bad() const override { return stage_.first() ? own_.samples_bad() : 0; }

 private:
  ProcessGroup& g_;
  Stage stage_;
  BatchSource& own_;
  torch::Device device_;
};

class PipelineParallel final : public Parallelism {
 public:
  PipelineParallel(Comm& comm, PipelineOptions o) : Parallelism(comm), g_(*comm.group()), o_(std::move(o)) {
    // Ranks replica-major: replica d's stage s is rank d * N + s, so a pipeline's stages are
    // neighbours (on one machine first) and stage s's replicas are s, s + N, s + 2N, ...
    if (world() % o_.stages != 0)
      fail(ErrorKind::usage, "{pipeline} " + std::to_string(o_.stages),
           "a number of processes that is a multiple of " + std::to_string(o_.stages) +
               " (N stages x D data-parallel replicas)",
           std::to_string(world()) + " processes",
           "start " + std::to_string(o_.stages) + " x D processes ({nproc} " + std::to_string(o_.stages) + " or " +
               std::to_string(2 * o_.stages) + ")");
    stage_.count = o_.stages;
    stage_.index = rank() % o_.stages;
    stage_.prev = stage_.first() ? -1 : rank() - 1;
    stage_.next = stage_.last() ? -1 : rank() + 1;
    stage_.first_rank = rank() - stage_.index;
    replica_ = rank() / o_.stages;
    replicas_ = world() / o_.stages;
    reads_images_ = stage_.first();
    if (replicas_ > 1) {
      std::vector<int> same_stage;
      for (int d = 0; d < replicas_; ++d) same_stage.push_back(d * o_.stages + stage_.index);
      replica_group_ = &comm.subgroup(same_stage, "stage" + std::to_string(stage_.index));
    }
  }

  // The model cut (by --pipeline-split, or balanced by the pieces' measured time), this stage's
  // pieces on the device, the plan said once.
  void place(Model& model, const torch::Device& device) override {
    const auto& pieces = model.pieces();
    if (pieces.empty())
      fail(ErrorKind::usage, "{pipeline} " + std::to_string(o_.stages),
           "a model whose forward frugal can cut: a zoo model, or a TorchScript module whose forward only calls its "
           "top-level children in turn (an nn.Sequential, scripted or traced)",
           "a TorchScript module whose forward is its own code" +
               (model.why_uncut().empty() ? std::string() : ": " + model.why_uncut()),
           "save the model as an nn.Sequential of its parts, or train it with data parallelism ({nproc})");
    if (static_cast<int>(pieces.size()) < o_.stages)
      fail(ErrorKind::usage, "{pipeline} " + std::to_string(o_.stages), "at most one stage per piece of the model",
           std::to_string(pieces.size()) + " pieces", "use fewer stages");
    std::vector<double> cost;
    std::vector<std::size_t> begins;
    std::string how;
    if (!o_.split.empty()) {
      begins = stages_at(pieces, o_.split, o_.stages);
      how = "cut at {pipeline_split}";
    } else {
      if (o_.balance == "time") {
        cost = piece_costs(model, device);
        how = "balanced by each piece's measured forward and backward time";
      }
      if (cost.empty() || cost[0] < 0) {  // asked for, or the measuring ran out of memory
        if (o_.balance == "time" && rank0())
          note("pipeline: out of memory measuring the pieces on " + device.str() + "; balancing by parameters");
        cost = piece_parameters(model);
        how = "balanced by parameters";
      }
      begins = balance_stages(cost, o_.stages);
    }
    begins.push_back(pieces.size());
    begins_ = begins;
    stage_.begin = begins[static_cast<std::size_t>(stage_.index)];
    stage_.end = begins[static_cast<std::size_t>(stage_.index) + 1];
    stage_.modules = Stage::modules_of(pieces, stage_.begin, stage_.end);
    device_ = device;
    classes_ = classes_of(model);  // before a rank lets go of the head (release_other_stages)
    for (auto& m : model.named_modules("", /*include_self=*/false))
      if (stage_.modules.count(m.key())) m.value()->to(device);
    for (auto& b : model.named_buffers())
      if (stage_.holds(b.key())) own_buffers_.insert(b.value().unsafeGetTensorImpl());
    if (rank0()) say_plan(model, begins, cost, how);
  }

  std::unique_ptr<TrainStep> make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                       const StepOptions& options) override {
    // A micro-batch of ceil(B / M) samples (o_.sample's first size), or the smaller one a resumed
    // run had come down to (a resumed checkpoint's micro-batch is this step's forward size).
    StepOptions o = options;
    o.micro_batch = static_cast<int>(std::min<std::int64_t>(options.micro_batch, o_.sample.at(0)));
    micro_batch_ = o.micro_batch;
    std::vector<torch::Tensor> params;
    for (auto& p : model.named_parameters())
      if (p.value().requires_grad() && stage_.holds(p.key())) params.push_back(p.value());
    NamedTensors named;
    for (auto& p : model.named_parameters())
      if (stage_.holds(p.key())) {
        named.emplace_back(p.key(), p.value());
        parameter_bytes_ += static_cast<double>(p.value().nbytes());
      }
    for (const auto& [name, t] : optimizer_state(optimizer, named))
      if (t.numel() > 1) optimizer_bytes_ += static_cast<double>(t.nbytes());  // not the step counters
    if (!rank0()) release_other_stages(model, optimizer);
    return std::make_unique<PipelineStep>(model, optimizer, scaler, o, g_, replica_group_, replica_ == 0, stage_,
                                          std::move(params), figures_);
  }

  // Every later stage's parameters, buffers and optimizer state from the first replica's rank
  // that trains them into rank 0's copy, which saves one whole model under the whole model's
  // names; the other ranks take no part (their copies of other stages stay as they were, unused).
  // Rank 0 knows each tensor's shape and dtype from its own copy (every rank built the same model
  // and optimizer state: create_state), so they travel without headers, in one order.
  void gather(Model& model, const OptimizerSetup& opt) override {
    if (replica_ != 0) return;
    torch::NoGradGuard no_grad;
    const torch::Device device = g_.backend() == "gloo" ? torch::Device(torch::kCPU) : first_device(model);
    if (!rank0()) {
      const StageTensors mine = stage_tensors(model, opt, stage_.index);
      for (const auto& t : mine.live) g_.send(t.to(device).contiguous(), 0, kGatherTag);
      for (const auto& [name, t] : mine.state) g_.send(t.to(device).contiguous(), 0, kGatherTag);
      g_.wait_sends();
      return;
    }
    for (int s = 1; s < stage_.count; ++s) {
      StageTensors theirs = stage_tensors(model, opt, s);
      auto receive = [&](const torch::Tensor& like) {
        auto t = torch::empty(like.sizes(), like.options().device(device));
        g_.recv(t, s, kGatherTag);
        return t;
      };
      for (auto& t : theirs.live) t.copy_(receive(t));
      Checkpoint ck;
      for (const auto& [name, t] : theirs.state) ck.state.emplace_back(name, receive(t).cpu());
      load_optimizer_state(*opt.optimizer, theirs.params, ck);
    }
  }

  // Each rank's figures since the last call, one entry per rank (rank 0 records them), and the
  // bubble the schedule implies for equal stages, (N-1)/(M+N-1).
  nlohmann::json epoch_figures() override {
    constexpr int kColumns = 7;
    auto t = torch::zeros({world(), kColumns}, torch::kFloat64);
    const auto f = std::exchange(*figures_, StageFigures{});
    const double row[kColumns] = {static_cast<double>(stage_.index),
                                  static_cast<double>(replica_),
                                  parameter_bytes_,
                                  optimizer_bytes_,
                                  f.schedule,
                                  f.receiving,
                                  f.sending};
    for (int c = 0; c < kColumns; ++c) t[rank()][c] = row[c];
    g_.control_all_reduce_sum(t);
    auto a = t.accessor<double, 2>();
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < world(); ++r)
      ranks.push_back({{"rank", r},
                       {"stage", static_cast<int>(a[r][0])},
                       {"replica", static_cast<int>(a[r][1])},
                       {"parameter_bytes", static_cast<std::int64_t>(a[r][2])},
                       {"optimizer_state_bytes", static_cast<std::int64_t>(a[r][3])},
                       {"schedule_seconds", a[r][4]},
                       {"receive_wait_seconds", a[r][5]},
                       {"send_wait_seconds", a[r][6]},
                       {"idle_fraction", a[r][4] > 0 ? a[r][5] / a[r][4] : 0.0}});
    const double n = o_.stages, m = o_.micro_batches;
    return {{"stages", o_.stages},
            {"replicas", replicas_},
            {"micro_batches", o_.micro_batches},
            {"schedule_bubble", (n - 1) / (m + n - 1)},
            {"ranks", ranks}};
  }

  // Evaluated in chunks of the training micro-batch (which fits with its backward; the whole
  // validation batch of 256 may not), and running out of memory is a budget error on that stage:
  // halving there alone would leave the others waiting. The counts are the last stages' (of each
  // replica's shard), summed; the other stages' are not counts.
  Evaluation for_evaluation(Model& model, BatchSource& val, EvalOptions& options) override {
    if (!forward_) forward_ = std::make_shared<StageForward>(model, g_, stage_, classes_);
    planned_ = std::make_unique<PlannedBatches>(g_, stage_, val, device_);
    options.micro_batch = micro_batch_;
    options.out_of_memory = [stage = stage_.index](std::int64_t chunk) {
      fail(ErrorKind::budget, "GPU memory", "room to evaluate " + std::to_string(chunk) + " images at once",
           "out of memory on pipeline stage " + std::to_string(stage),
           "run the same command again with more {micro_batches} (smaller ones: the same global batch; it resumes "
           "from the last checkpoint), {grad_checkpoint} or more {pipeline} stages");
    };
    options.reduce = [&g = g_, last = stage_.last()](std::vector<torch::Tensor>& counts) {
      if (!last)
        for (auto& c : counts) c.zero_();
      g.all_reduce_sum(counts);
    };
    return {*forward_, *planned_};
  }
  // A stage's batch-norm statistics are averaged over its replicas; the copies of other stages'
  // buffers on this rank are not its to average (they are stale until gather).
  void average(std::vector<torch::Tensor>& tensors) override {
    if (!replica_group_) return;
    std::vector<torch::Tensor> mine;
    for (auto& t : tensors)
      if (own_buffers_.count(t.unsafeGetTensorImpl())) mine.push_back(t);
    if (mine.empty()) return;
    replica_group_->all_reduce_sum(mine);
    for (auto& t : mine) t.div_(replicas_);
  }
  // Every rank built the model from the same seed and resumed the same checkpoint; a stage uses
  // only its own tensors, so there is nothing to make equal (the others stay on the CPU).
  void equalize(std::vector<torch::Tensor>&) override {}
  std::string describe() const override {
    return "pipeline: stage " + std::to_string(stage_.index) + " of " + std::to_string(stage_.count) +
           (replicas_ > 1 ? ", replica " + std::to_string(replica_) + " of " + std::to_string(replicas_) : "") + " (" +
           g_.backend() + ")";
  }

 private:
  // Once training begins, only rank 0 (which saves the whole model: gather) uses the other
  // stages' tensors; another rank lets go of its copies of them (until then every rank built
  // and resumed the whole model and its optimizer state) and of their optimizer state: what it
  // holds is its own stage. Their parameters stay registered, empty, so the optimizer and the
  // module's names are unchanged; they get no gradient, so no step touches them.
  void release_other_stages(Model& model, torch::optim::Optimizer& optimizer) const {
    torch::NoGradGuard no_grad;
    auto& state = optimizer.state();
    for (auto& p : model.named_parameters())
      if (!stage_.holds(p.key())) {
        state.erase(p.value().unsafeGetTensorImpl());
        p.value().set_data(torch::empty({0}, p.value().options()));
      }
    for (auto& b : model.named_buffers())
      if (!stage_.holds(b.key())) b.value().set_data(torch::empty({0}, b.value().options()));
  }

  // Stage s's tensors on this rank: parameters then buffers (live), its parameters by name, and
  // their optimizer state.
  struct StageTensors {
    std::vector<torch::Tensor> live;
    NamedTensors params, state;
  };
  StageTensors stage_tensors(Model& model, const OptimizerSetup& opt, int s) const {
    Stage owner = stage_;
    owner.modules = modules_of(model, s);
    StageTensors out;
    for (auto& p : model.named_parameters())
      if (owner.holds(p.key())) {
        out.live.push_back(p.value());
        out.params.emplace_back(p.key(), p.value());
      }
    for (auto& b : model.named_buffers())
      if (owner.holds(b.key())) out.live.push_back(b.value());
    out.state = optimizer_state(*opt.optimizer, out.params);
    return out;
  }

  // Forward and backward seconds of each piece on a micro-batch of zeros, one piece on the device at
  // a time (the whole model need not fit), measured by rank 0 and used by all. The model is in eval
  // mode meanwhile (batch-norm statistics and dropout untouched).
  std::vector<double> piece_costs(Model& model, const torch::Device& device) {
    const auto& pieces = model.pieces();
    auto cost = torch::zeros({static_cast<std::int64_t>(pieces.size())}, torch::kFloat64);
    if (rank0()) {
      try {
        measure(model, device, cost);
      } catch (const c10::Error& e) {
        if (!is_out_of_memory(e)) throw;
        for (auto& m : model.named_modules("", false)) m.value()->to(torch::kCPU);
        for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
        empty_device_cache(device);
        cost.fill_(-1);  // every rank balances by parameters
      }
    }
    g_.control_broadcast(cost);
    return {cost.data_ptr<double>(), cost.data_ptr<double>() + cost.numel()};
  }

  // Each piece's parameters (the fallback and --pipeline-balance parameters).
  static std::vector<double> piece_parameters(Model& model) {
    std::vector<double> out;
    for (const auto& piece : model.pieces()) {
      Stage st;
      st.modules = {piece.modules.begin(), piece.modules.end()};
      double n = 0;
      for (auto& p : model.named_parameters())
        if (st.holds(p.key())) n += static_cast<double>(p.value().numel());
      out.push_back(n);
    }
    return out;
  }

  void measure(Model& model, const torch::Device& device, torch::Tensor& cost) {
    const auto& pieces = model.pieces();
    {
      const bool was_training = model.is_training();
      model.eval();
      auto named = model.named_modules("", false);
      auto x = as_channels_last(torch::zeros(o_.sample, torch::TensorOptions().device(device)));
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        for (const auto& m : pieces[i].modules)
          if (named.contains(m)) named[m]->to(device);
        double best = std::numeric_limits<double>::infinity();
        torch::Tensor out;
        for (int rep = 0; rep < 3; ++rep) {
          // The first piece's input is the batch, whose gradient training never computes.
          auto in = i == 0 ? x.detach() : x.detach().requires_grad_();
          sync(device);
          const auto t0 = std::chrono::steady_clock::now();
          {
            AutocastGuard autocast(device.type(), o_.amp);
            out = pieces[i].run(in);
          }
          out.to(torch::kFloat32).sum().backward();
          sync(device);
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (rep > 0) best = std::min(best, secs);
        }
        for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
        x = out.detach();
        for (const auto& m : pieces[i].modules)
          if (named.contains(m)) named[m]->to(torch::kCPU);
        cost[static_cast<std::int64_t>(i)] = best;
      }
      model.train(was_training);
    }
  }

  std::set<std::string> modules_of(const Model& model, int s) const {
    return Stage::modules_of(model.pieces(), begins_[static_cast<std::size_t>(s)],
                             begins_[static_cast<std::size_t>(s) + 1]);
  }

  void say_plan(Model& model, const std::vector<std::size_t>& begins, const std::vector<double>& cost,
                const std::string& how) {
    const auto& pieces = model.pieces();
    double all = 0;
    for (double c : cost) all += c;
    std::string line = "pipeline: " + std::to_string(o_.stages) + " stages x " +
                       (replicas_ > 1 ? std::to_string(replicas_) + " data-parallel replicas x " : "") +
                       std::to_string(o_.micro_batches) + " micro-batches a step, 1F1B (" + how + "):";
    for (int s = 0; s < o_.stages; ++s) {
      const std::size_t b = begins[static_cast<std::size_t>(s)], e = begins[static_cast<std::size_t>(s) + 1];
      std::int64_t numel = 0;
      Stage st;
      st.modules = Stage::modules_of(pieces, b, e);
      for (auto& p : model.named_parameters())
        if (st.holds(p.key())) numel += p.value().numel();
      double share = 0;
      for (std::size_t i = b; i < e && i < cost.size(); ++i) share += cost[i];
      line +=
          " stage " + std::to_string(s) + " = " + pieces[b].name + (e - b > 1 ? ".." + pieces[e - 1].name : "") + " (" +
          millions(numel) + " parameters" +
          (all > 0 ? ", " + std::to_string(static_cast<int>(std::lround(100 * share / all))) + "% of the time" : "") +
          ")" + (s + 1 < o_.stages ? ";" : "");
    }
    note(line);
  }

  static void sync(const torch::Device& device) {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }

  static std::string millions(std::int64_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f M", static_cast<double>(n) / 1e6);
    return buf;
  }

  static torch::Device first_device(Model& model) {
    for (auto& p : model.parameters())
      if (!p.device().is_cpu()) return p.device();
    return torch::kCPU;
  }

  std::int64_t classes_of(Model& model) const {
    std::int64_t classes = 0;
    for (auto& p : model.named_parameters())
      if (p.key() == model.head_prefix() + ".weight") classes = p.value().size(0);
    return classes;
  }

  int rank() const { return comm_.rank(); }
  int world() const { return comm_.world(); }
  bool rank0() const { return comm_.rank0(); }

  ProcessGroup& g_;  // the run's, comm_'s
  PipelineOptions o_;
  Stage stage_;
  ProcessGroup* replica_group_ = nullptr;  // this stage's replicas, comm_'s (null: one pipeline)
  std::shared_ptr<StageFigures> figures_ = std::make_shared<StageFigures>();  // shared with the step
  double parameter_bytes_ = 0, optimizer_bytes_ = 0;
  std::set<const void*> own_buffers_;
  std::vector<std::size_t> begins_;
  std::shared_ptr<StageForward> forward_;
  std::unique_ptr<PlannedBatches> planned_;
  torch::Device device_ = torch::kCPU;  // this stage's
  std::int64_t micro_batch_ = 0;        // the training micro-batch (0 before make_step: whole batches)
  std::int64_t classes_ = 0;            // the model's outputs
};

}  // namespace

std::unique_ptr<Parallelism> make_pipeline(Comm& comm, const PipelineOptions& options) {
  return std::make_unique<PipelineParallel>(comm, options);
}

}  // namespace frugal
