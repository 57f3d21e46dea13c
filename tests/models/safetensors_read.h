// A minimal safetensors reader for test fixtures (F32 and I64 only), so that the model tests do not
// depend on the checkpoint library.
#pragma once

#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace frugal::test {

inline std::map<std::string, torch::Tensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, data.data(), 8);
  auto header = nlohmann::json::parse(data.substr(8, header_len));
  const char* base = data.data() + 8 + header_len;
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    std::vector<std::int64_t> shape = info["shape"].get<std::vector<std::int64_t>>();
    auto dtype = info["dtype"] == "F32" ? torch::kFloat32 : torch::kInt64;
    std::size_t begin = info["data_offsets"][0], end = info["data_offsets"][1];
    auto t = torch::empty(shape, dtype);
    std::memcpy(t.data_ptr(), base + begin, end - begin);
    out[name] = t;
  }
  return out;
}

}  // namespace frugal::test
