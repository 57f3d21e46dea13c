// Constructors of each model family (internal; the public entry point is make_model()).
#pragma once

#include "frugal/models/models.h"

namespace frugal::detail {

std::shared_ptr<Model> make_cnn(int num_classes, int channels);
std::shared_ptr<Model> make_resnet18(int num_classes, int channels);
std::shared_ptr<Model> make_resnet50(int num_classes, int channels);
std::shared_ptr<Model> make_efficientnet_b0(int num_classes, int channels);

}  // namespace frugal::detail
