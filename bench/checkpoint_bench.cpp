// Checkpoint costs for bench/checkpoint.sh: synchronous save time and size, the training stall of
// a background save (CheckpointWriter::submit), and delta/full size ratios after one real
// optimizer step (all weights trained vs. a frozen backbone). Also writes OUT/state.safetensors,
// the same tensors, for the Python torch.save baseline.
//   checkpoint_bench MODEL OUT_DIR [TRIALS]  -> one JSON line on stdout
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/models/models.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

NamedTensors named_params(Model& m) {
  NamedTensors out;
  for (auto& item : m.named_parameters()) out.emplace_back(item.key(), item.value());
  return out;
}

void train_step(Model& m, torch::optim::Optimizer& opt, int channels) {
  torch::manual_seed(1);
  opt.zero_grad();
  auto y = m.forward(torch::randn({4, channels, 64, 64}));
  y.pow(2).mean().backward();
  opt.step();
}

Checkpoint make_ckpt(Model& m, torch::optim::Optimizer& opt, const std::string& name, std::int64_t step) {
  Checkpoint c;
  c.model = {name, {"a", "b"}, 64, 3, {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}};
  c.weights = to_named(state_dict(m));
  c.state = optimizer_state(opt, named_params(m));
  c.state.emplace_back("rng.cpu", cpu_rng_state());
  c.step = step;
  return c;
}

double delta_ratio(const fs::path& dir, const Checkpoint& a, const Checkpoint& b) {
  save_checkpoint(dir / "base.safetensors", a);
  save_delta_checkpoint(dir / "delta.safetensors", b, a, dir / "base.safetensors");
  return double(fs::file_size(dir / "delta.safetensors")) / double(fs::file_size(dir / "base.safetensors"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: checkpoint_bench MODEL OUT_DIR [TRIALS]\n");
    return 2;
  }
  std::string name = argv[1];
  fs::path out = argv[2];
  int trials = argc > 3 ? std::atoi(argv[3]) : 5;
  fs::create_directories(out);
  torch::manual_seed(0);
  auto model = make_model(name, 10, 3);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  train_step(*model, opt, 3);
  Checkpoint ckpt = make_ckpt(*model, opt, name, 1);

  NamedTensors all = ckpt.weights;
  for (auto& [n, t] : ckpt.state) all.emplace_back("frugal." + n, t);
  save_safetensors(out / "state.safetensors", all, {});

  CheckpointManager sync(out / "sync", {.retention = {.keep_last = 1, .keep_best = 0}, .write_best = false});
  std::vector<double> save_s, stall_s, bg_total_s;
  std::uint64_t bytes = 0;
  for (int i = 0; i < trials; ++i) {
    ckpt.step = i + 1;
    double t0 = now();
    auto r = sync.save(ckpt);
    save_s.push_back(now() - t0);
    bytes = r.bytes;
  }
  CheckpointManager bg(out / "bg", {.retention = {.keep_last = 1, .keep_best = 0}, .write_best = false});
  {
    CheckpointWriter writer(bg);
    for (int i = 0; i < trials; ++i) {
      ckpt.step = i + 1;
      double t0 = now();
      writer.submit(ckpt);
      double t1 = now();
      writer.wait();
      stall_s.push_back(t1 - t0);
      bg_total_s.push_back(now() - t0);
    }
  }

  // One more real step: everything trained, then (from the same start) only the head.
  Checkpoint before = snapshot(ckpt);
  train_step(*model, opt, 3);
  double full_ratio = delta_ratio(out, before, make_ckpt(*model, opt, name, 2));

  torch::manual_seed(0);
  auto ft = make_model(name, 10, 3);
  std::string head = ft->head_prefix();
  std::vector<torch::Tensor> head_params;
  for (auto& item : ft->named_parameters()) {
    bool is_head = item.key().rfind(head, 0) == 0;
    item.value().set_requires_grad(is_head);
    if (is_head) head_params.push_back(item.value());
  }
  ft->eval();  // a frozen backbone keeps its batch-norm statistics too
  torch::optim::AdamW ft_opt(head_params, torch::optim::AdamWOptions(1e-3));
  train_step(*ft, ft_opt, 3);
  Checkpoint ft_a = make_ckpt(*ft, ft_opt, name, 1);
  ft_a = snapshot(ft_a);
  train_step(*ft, ft_opt, 3);
  double ft_ratio = delta_ratio(out, ft_a, make_ckpt(*ft, ft_opt, name, 2));

  nlohmann::json j = {{"model", name},
                      {"checkpoint_bytes", bytes},
                      {"sync_save_s", median(save_s)},
                      {"background_stall_s", median(stall_s)},
                      {"background_total_s", median(bg_total_s)},
                      {"delta_ratio_full_training", full_ratio},
                      {"delta_ratio_frozen_backbone", ft_ratio},
                      {"trials", trials}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
