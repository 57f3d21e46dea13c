#include "compress/onnx_graph.h"

#include <stdexcept>

#include "frugal/util/version.h"
#include "frugal/util/protobuf.h"

namespace frugal::onnx {

Attribute ints_attr(std::string name, std::vector<std::int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::ints;
  a.ints = std::move(v);
  return a;
}

Attribute int_attr(std::string name, std::int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}

Attribute float_attr(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}

std::string Graph::add(const std::string& op_type, std::vector<std::string> inputs, const std::string& hint,
                       std::vector<Attribute> attributes) {
  const int n = name_uses_[hint]++;
  std::string out = n == 0 ? hint : hint + "_" + std::to_string(n);
  nodes_.push_back(Node{op_type, std::move(inputs), {out}, std::move(attributes)});
  return out;
}

std::string Graph::constant(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> values) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  if (n != static_cast<std::int64_t>(values.size()))
    throw std::logic_error("onnx initializer " + name + ": dims do not match the values");
  initializers_.push_back(Initializer{name, std::move(dims), std::move(values)});
  return name;
}

void Graph::mark_output(const std::string& value) {
  for (auto& node : nodes_)
    for (auto& out : node.outputs)
      if (out == value) {
        out = output_name;
        return;
      }
  throw std::logic_error("onnx graph: no node produces " + value);
}

namespace {

// AttributeProto.AttributeType
constexpr int kAttrFloat = 1, kAttrInt = 2, kAttrInts = 7;
constexpr int kTensorFloat = 1;  // TensorProto.DataType.FLOAT

pb::Writer attribute_proto(const Attribute& a) {
  pb::Writer w;
  w.string(1, a.name);
  switch (a.kind) {
    case Attribute::Kind::f:
      w.float32(2, a.f);
      w.int32(20, kAttrFloat);
      break;
    case Attribute::Kind::i:
      w.int64(3, a.i);
      w.int32(20, kAttrInt);
      break;
    case Attribute::Kind::ints:
      w.packed_int64(8, a.ints);
      w.int32(20, kAttrInts);
      break;
  }
  return w;
}

pb::Writer node_proto(const Node& n, int index) {
  pb::Writer w;
  for (const auto& in : n.inputs) w.string(1, in);
  for (const auto& out : n.outputs) w.string(2, out);
  w.string(3, n.op_type + "_" + std::to_string(index));
  w.string(4, n.op_type);
  for (const auto& a : n.attributes) w.message(5, attribute_proto(a));
  return w;
}

pb::Writer tensor_proto(const Initializer& t) {
  pb::Writer w;
  w.packed_int64(1, t.dims);
  w.int32(2, kTensorFloat);
  w.string(8, t.name);
  // raw_data is little-endian; so is every machine frugal builds for.
  w.bytes(9, std::string_view(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float)));
  return w;
}

// ValueInfoProto for a float tensor whose first dimension is the symbolic "batch".
pb::Writer value_info(const std::string& name, const std::vector<std::int64_t>& rest) {
  pb::Writer shape;
  pb::Writer batch;
  batch.string(2, "batch");  // dim_param
  shape.message(1, batch);
  for (auto d : rest) {
    pb::Writer dim;
    dim.int64(1, d);  // dim_value
    shape.message(1, dim);
  }
  pb::Writer tensor_type;
  tensor_type.int32(1, kTensorFloat);  // elem_type
  tensor_type.message(2, shape);
  pb::Writer type;
  type.message(1, tensor_type);
  pb::Writer vi;
  vi.string(1, name);
  vi.message(2, type);
  return vi;
}

}  // namespace

std::string Graph::serialize(const std::string& graph_name, const std::map<std::string, std::string>& metadata) const {
  pb::Writer graph;
  for (std::size_t i = 0; i < nodes_.size(); ++i) graph.message(1, node_proto(nodes_[i], static_cast<int>(i)));
  graph.string(2, graph_name);
  for (const auto& t : initializers_) graph.message(5, tensor_proto(t));
  graph.message(11, value_info(input_name, input_chw));
  graph.message(12, value_info(output_name, {num_outputs}));

  pb::Writer model;
  model.int64(1, kIrVersion);
  model.string(2, "frugal");
  model.string(3, kVersion);
  model.message(7, graph);
  pb::Writer opset;
  opset.string(1, "");  // the default ai.onnx domain
  opset.int64(2, kOpsetVersion);
  model.message(8, opset);
  for (const auto& [key, value] : metadata) {
    pb::Writer entry;
    entry.string(1, key);
    entry.string(2, value);
    model.message(14, entry);
  }
  return model.take();
}

}  // namespace frugal::onnx
