#include "frugal/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint_files/checkpoint_files.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

struct DtypeName {
  const char* name;
  torch::ScalarType type;
};
constexpr DtypeName kDtypes[] = {
    {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16}, {"F64", torch::kFloat64},
    {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},     {"I8", torch::kInt8},
    {"U8", torch::kUInt8},    {"BOOL", torch::kBool},
};

torch::Tensor host_contiguous(const torch::Tensor& t) { return t.detach().to(torch::kCPU).contiguous(); }

// The JSON header, padded with spaces so the payload starts 8-byte aligned (as safetensors does).
std::string header_json(const NamedTensors& tensors, const std::vector<torch::Tensor>& host, const Metadata& metadata) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) j["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& name = tensors[i].first;
    if (name == "__metadata__" || !seen.insert(name).second)
      fail(ErrorKind::invalid, "tensor \"" + name + "\"", "unique tensor names other than __metadata__", "a duplicate",
           "rename the tensor");
    std::uint64_t n = host[i].nbytes();
    j[name] = {{"dtype", safetensors_dtype(host[i].scalar_type())},
               {"shape", host[i].sizes().vec()},
               {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string s = j.dump();
  s.append((8 - s.size() % 8) % 8, ' ');
  return s;
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::vector<torch::Tensor> to_host(const NamedTensors& tensors) {
  std::vector<torch::Tensor> host;
  host.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) fail(ErrorKind::invalid, "tensor \"" + name + "\"", "a defined tensor", "an undefined one", "");
    host.push_back(host_contiguous(t));
  }
  return host;
}

}  // namespace

std::string safetensors_dtype(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d.name;
  fail(ErrorKind::unsupported, "safetensors", "one of F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL",
       std::string("dtype ") + c10::toString(type), "convert the tensor first");
}

torch::ScalarType torch_dtype(const std::string& name, const std::string& where) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.type;
  fail(ErrorKind::unsupported, where, "a dtype among F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL", "\"" + name + "\"",
       "convert the tensors with the safetensors Python package");
}

const torch::Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

const torch::Tensor& SafetensorsFile::get(const std::string& name) const {
  if (const auto* t = find(name)) return *t;
  fail(ErrorKind::invalid, source, "a tensor named \"" + name + "\"", "none",
       "the file was written for another model or by another tool");
}

std::string safetensors_bytes(const NamedTensors& tensors, const Metadata& metadata) {
  auto host = to_host(tensors);
  std::string header = header_json(tensors, host, metadata);
  std::string out = le64(header.size()) + header;
  for (const auto& t : host) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return out;
}

void save_safetensors(const fs::path& path, const NamedTensors& tensors, const Metadata& metadata, Env& env) {
  auto host = to_host(tensors);
  std::string header = header_json(tensors, host, metadata);
  write_atomic(env, path, [&](WritableFile& f) {
    f.append(le64(header.size()));
    f.append(header);
    for (const auto& t : host) f.append(t.data_ptr(), t.nbytes());
  });
}

namespace {

SafetensorsFile parse_checked(const std::string& bytes, SafetensorsHeader h, const std::string& name) {
  // The header parser has checked every data_offsets range against the file size (without
  // wrapping) and dtype x shape against it, so the copies below stay inside `bytes`.
  struct Item {
    std::string name;
    std::uint64_t begin, end;
    const nlohmann::json* spec;
  };
  std::vector<Item> items;
  for (auto& [key, spec] : h.tensors.items())
    items.push_back(
        {key, spec["data_offsets"][0].get<std::uint64_t>(), spec["data_offsets"][1].get<std::uint64_t>(), &spec});
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.begin < b.begin; });
  SafetensorsFile out;
  out.source = name;
  out.metadata = std::move(h.metadata);
  std::uint64_t expected_begin = 0;
  for (const auto& it : items) {
    std::string where = name + ":" + it.name;
    if (it.begin != expected_begin)
      fail(ErrorKind::invalid, where, "data starting at byte " + std::to_string(expected_begin),
           "byte " + std::to_string(it.begin) + " (overlap or hole)", "the file is corrupt");
    auto type = torch_dtype((*it.spec)["dtype"].get<std::string>(), where);
    std::vector<std::int64_t> shape;
    for (const auto& d : (*it.spec)["shape"]) {
      if (!d.is_number_unsigned()) fail(ErrorKind::invalid, where, "non-negative integer dimensions", d.dump(), "");
      shape.push_back(checked_cast<std::int64_t>(d.get<std::uint64_t>(), where, "a dimension"));
    }
    auto t = torch::empty(shape, torch::TensorOptions().dtype(type));
    if (t.nbytes() != it.end - it.begin)
      fail(ErrorKind::invalid, where, std::to_string(t.nbytes()) + " bytes for its dtype and shape",
           std::to_string(it.end - it.begin), "the file is corrupt");
    if (t.nbytes()) std::memcpy(t.data_ptr(), bytes.data() + h.payload_offset() + it.begin, t.nbytes());
    out.tensors.emplace_back(it.name, std::move(t));
    expected_begin = it.end;
  }
  if (h.payload_offset() + expected_begin != bytes.size())
    fail(ErrorKind::invalid, name, std::to_string(h.payload_offset() + expected_begin) + " bytes",
         std::to_string(bytes.size()) + " bytes", "the file has trailing data or holes; it is corrupt");
  return out;
}

}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& name) {
  return parse_safetensors(bytes, parse_safetensors_header(bytes.data(), bytes.size(), name), name);
}

SafetensorsFile parse_safetensors(const std::string& bytes, SafetensorsHeader header, const std::string& name) {
  try {
    return parse_checked(bytes, std::move(header), name);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // nlohmann's, c10's, std::'s own: bad input at this boundary
    fail(ErrorKind::invalid, name, "a safetensors file", e.what(), "the file is corrupt or crafted");
  }
}

SafetensorsFile load_safetensors(const fs::path& path) {
  // A file the user names (--init) may be a link, but only to a regular file: a FIFO would block
  // the read and a device never end it.
  return parse_safetensors(*read_regular_at_most(path, std::numeric_limits<std::uint64_t>::max(), Links::follow),
                           path.string());
}

}  // namespace frugal
