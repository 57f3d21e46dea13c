// --class-weights auto|FILE (issue 45): each class's weight in the training loss, for imbalanced
// data. Torch-free: the weights; the step passes them to cross-entropy (train/step.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal {

// scikit-learn's compute_class_weight("balanced"): n_samples / (n_classes x count) per class, so
// that every class weighs as much in the loss as the others. A class with no training image gets
// 0 (it cannot be learned; said by the caller).
std::vector<double> balanced_class_weights(const std::vector<std::int64_t>& counts);

// FILE: one `CLASS,WEIGHT` line per class of `classes` (a first line `class,weight` is a header;
// blank lines and `#` comments skipped); weights >= 0 and finite. Error(invalid) naming the file
// and line for anything else, a class it names twice or that is not one of `classes`, or a class of
// `classes` it does not name.
std::vector<double> read_class_weights(const std::string& file, const std::vector<std::string>& classes);

// The weights of `spec` ("auto" or a file) for `classes` with these training counts.
std::vector<double> class_weights(const std::string& spec, const std::vector<std::string>& classes,
                                  const std::vector<std::int64_t>& counts);

}  // namespace frugal
