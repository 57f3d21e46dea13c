// ONNX export (docs/onnx.md): a standard ModelProto (IR 8, opset 17) built by walking frugal's
// model structure, with batch norm folded into the convolutions, dropout and stochastic depth
// dropped (inference semantics), a dynamic batch dimension named "batch", and the preprocessing
// (mean/std, input size, channels, classes) in metadata_props.
#pragma once

#include <filesystem>
#include <string>

#include "frugal/util/env.h"
#include "frugal/models/models.h"

namespace frugal {

// The serialized ModelProto. `model` is read only (its weights, batch-norm statistics and layer
// options). Throws Error(unsupported) for an architecture without a graph builder.
std::string onnx_model_bytes(const ModelInfo& info, Model& model);

// Writes onnx_model_bytes() to `out` crash-safely through `env`: a failed write leaves what was
// at `out` before untouched.
void export_onnx(const ModelInfo& info, Model& model, const std::filesystem::path& out, Env& env = Env::real());

}  // namespace frugal
