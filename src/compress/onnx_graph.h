// An ONNX graph under construction, serialized with frugal's protobuf encoder (frugal/util/protobuf.h).
// Torch-free: initializers are plain float arrays. Field numbers follow onnx/onnx.proto (IR 8).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace frugal::onnx {

struct Attribute {
  std::string name;
  enum class Kind { ints, i, f } kind = Kind::i;
  std::vector<std::int64_t> ints;
  std::int64_t i = 0;
  float f = 0;
};

Attribute ints_attr(std::string name, std::vector<std::int64_t> v);
Attribute int_attr(std::string name, std::int64_t v);
Attribute float_attr(std::string name, float v);

struct Node {
  std::string op_type;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
};

struct Initializer {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<float> values;  // C order, dims' product long
};

class Graph {
 public:
  // Appends a node with a fresh output name derived from `hint`; returns that name.
  std::string add(const std::string& op_type, std::vector<std::string> inputs, const std::string& hint,
                  std::vector<Attribute> attributes = {});
  // Adds a float initializer; returns its name.
  std::string constant(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> values);

  // The one input (N, C, H, W) with a dynamic batch "batch", the one output (N, classes).
  std::string input_name = "input", output_name = "logits";
  std::vector<std::int64_t> input_chw;
  std::int64_t num_outputs = 0;

  // Renames the last node's output to output_name.
  void mark_output(const std::string& value);

  const std::vector<Node>& nodes() const { return nodes_; }

  // A ModelProto: ir_version 8, opset 17, metadata_props in key order.
  std::string serialize(const std::string& graph_name, const std::map<std::string, std::string>& metadata) const;

 private:
  std::vector<Node> nodes_;
  std::vector<Initializer> initializers_;
  std::map<std::string, int> name_uses_;
};

inline constexpr std::int64_t kIrVersion = 8;
inline constexpr std::int64_t kOpsetVersion = 17;

}  // namespace frugal::onnx
