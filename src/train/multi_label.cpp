// Multi-label evaluation counts and figures (multi_label.h).
#include "train/multi_label.h"

#include <cmath>

#include "frugal/util/error.h"

namespace frugal {
namespace {

constexpr double kBinWidth = 2 * MultiLabelTally::kLogitRange / static_cast<double>(MultiLabelTally::kBins);

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1.0 - p)); }

double ratio(std::int64_t a, std::int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : NAN; }

}  // namespace

MultiLabelTally::MultiLabelTally(std::int64_t classes, const std::vector<float>& thresholds,
                                 const torch::Device& device)
    : classes_(classes) {
  if (thresholds.size() != 1 && static_cast<std::int64_t>(thresholds.size()) != classes)
    fail(ErrorKind::usage, "multi-label evaluation", "one threshold or one per class (" + std::to_string(classes) + ")",
         std::to_string(thresholds.size()), "");
  std::vector<float> lt;
  for (std::int64_t c = 0; c < classes; ++c)
    lt.push_back(static_cast<float>(logit(thresholds[thresholds.size() == 1 ? 0 : static_cast<std::size_t>(c)])));
  auto on = torch::TensorOptions().device(device);
  logit_thresholds_ = torch::tensor(lt, torch::kFloat32).to(device);
  hist_pos_ = torch::zeros({classes, kBins}, on.dtype(torch::kInt64));
  hist_neg_ = torch::zeros({classes, kBins}, on.dtype(torch::kInt64));
  tp_ = torch::zeros({classes}, on.dtype(torch::kInt64));
  fp_ = torch::zeros({classes}, on.dtype(torch::kInt64));
  fn_ = torch::zeros({classes}, on.dtype(torch::kInt64));
  exact_ = torch::zeros({1}, on.dtype(torch::kInt64));
}

void MultiLabelTally::add(const torch::Tensor& logits, const torch::Tensor& targets) {
  TORCH_CHECK(logits.dim() == 2 && logits.size(1) == classes_ && targets.sizes() == logits.sizes(),
              "multi-label evaluation: logits ", logits.sizes(), " and targets ", targets.sizes());
  const auto positive = targets > 0.5;
  // Each (image, class) score's bin, numbered over all classes: class c's bins are c*kBins + b.
  auto bin = ((logits.to(torch::kFloat64) + kLogitRange) / kBinWidth).floor().clamp(0, kBins - 1).to(torch::kInt64);
  auto flat = bin + torch::arange(classes_, bin.options()).mul(kBins).unsqueeze(0);
  const std::int64_t cells = classes_ * kBins;
  hist_pos_.view({-1}).add_(torch::bincount(flat.masked_select(positive), {}, cells));
  hist_neg_.view({-1}).add_(torch::bincount(flat.masked_select(positive.logical_not()), {}, cells));
  const auto predicted = logits >= logit_thresholds_.unsqueeze(0);
  tp_.add_((predicted & positive).sum(0));
  fp_.add_((predicted & positive.logical_not()).sum(0));
  fn_.add_((predicted.logical_not() & positive).sum(0));
  exact_.add_((predicted == positive).all(1).sum().reshape({1}));
}

double average_precision(const std::int64_t* pos, const std::int64_t* neg, std::int64_t bins) {
  std::int64_t positives = 0;
  for (std::int64_t b = 0; b < bins; ++b) positives += pos[b];
  if (positives == 0) return NAN;
  // sklearn's step sum: over the distinct scores from the highest, (recall gained) x precision.
  double ap = 0;
  std::int64_t tp = 0, fp = 0;
  for (std::int64_t b = bins - 1; b >= 0; --b) {
    if (pos[b] == 0 && neg[b] == 0) continue;
    tp += pos[b];
    fp += neg[b];
    ap += static_cast<double>(pos[b]) / static_cast<double>(positives) * ratio(tp, tp + fp);
  }
  return ap;
}

double best_f1_threshold(const std::int64_t* pos, const std::int64_t* neg, std::int64_t bins) {
  std::int64_t positives = 0;
  for (std::int64_t b = 0; b < bins; ++b) positives += pos[b];
  if (positives == 0) return NAN;
  // Predicting bins >= b (logits from b's lower edge): F1 by b from the top. Where several
  // neighbouring thresholds give the best F1 (no score lies between them: a gap between the
  // classes), the middle of that gap, which new images' scores are least likely to cross.
  double best = -1;
  std::int64_t best_hi = bins - 1, best_lo = bins - 1, tp = 0, fp = 0;
  bool in_run = false;
  for (std::int64_t b = bins - 1; b >= 0; --b) {
    tp += pos[b];
    fp += neg[b];
    const double f1 = 2.0 * static_cast<double>(tp) / static_cast<double>(tp + fp + positives);
    if (f1 > best) {
      best = f1;
      best_hi = best_lo = b;
      in_run = true;
    } else if (f1 == best && in_run) {
      best_lo = b;
    } else {
      in_run = false;
    }
  }
  const double edge = -MultiLabelTally::kLogitRange + static_cast<double>(best_hi + best_lo) / 2.0 * kBinWidth;
  return sigmoid(edge);
}

void MultiLabelTally::fill(EvalResult& r) const {
  r.multi_label = true;
  const auto pos = hist_pos_.cpu().contiguous(), neg = hist_neg_.cpu().contiguous();
  const auto tp = tp_.cpu(), fp = fp_.cpu(), fn = fn_.cpu();
  const auto* tpp = tp.data_ptr<std::int64_t>();
  const auto* fpp = fp.data_ptr<std::int64_t>();
  const auto* fnp = fn.data_ptr<std::int64_t>();
  std::int64_t sum_tp = 0, sum_fp = 0, sum_fn = 0, with_positives = 0;
  double ap_sum = 0;
  r.per_class.clear();
  for (std::int64_t c = 0; c < classes_; ++c) {
    const std::int64_t* pc = pos.data_ptr<std::int64_t>() + c * kBins;
    const std::int64_t* nc = neg.data_ptr<std::int64_t>() + c * kBins;
    const double ap = average_precision(pc, nc, kBins);
    r.per_class.push_back(ap);
    r.best_thresholds.push_back(best_f1_threshold(pc, nc, kBins));
    r.positives.push_back(tpp[c] + fnp[c]);
    r.class_precision.push_back(ratio(tpp[c], tpp[c] + fpp[c]));
    r.class_recall.push_back(ratio(tpp[c], tpp[c] + fnp[c]));
    r.class_f1.push_back(ratio(2 * tpp[c], 2 * tpp[c] + fpp[c] + fnp[c]));
    sum_tp += tpp[c];
    sum_fp += fpp[c];
    sum_fn += fnp[c];
    if (!std::isnan(ap)) {
      ap_sum += ap;
      ++with_positives;
    }
  }
  r.mean_ap = with_positives > 0 ? ap_sum / static_cast<double>(with_positives) : NAN;
  r.precision = ratio(sum_tp, sum_tp + sum_fp);
  r.recall = ratio(sum_tp, sum_tp + sum_fn);
  r.f1 = ratio(2 * sum_tp, 2 * sum_tp + sum_fp + sum_fn);
  r.accuracy = ratio(exact_.cpu().item<std::int64_t>(), r.samples);
}

}  // namespace frugal
