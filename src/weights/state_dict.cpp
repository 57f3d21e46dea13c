#include "weights/state_dict.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "frugal/util/checked.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

using pickle::Graph;
using pickle::Kind;

// Where training scripts put the model's state dict beside the optimizer's, epoch and the like:
// timm and MMCV "state_dict", PyTorch's own tutorial "model_state_dict", torchvision's references
// "model", DeepSpeed and older scripts "module". Tried in this order; at most this many levels.
constexpr std::array<std::string_view, 4> kKeys = {"state_dict", "model_state_dict", "model", "module"};
constexpr int kMaxLevels = 4;
// Prefixes a wrapper adds to every name: DistributedDataParallel's, torch.compile's.
constexpr std::array<std::string_view, 2> kPrefixes = {"module.", "_orig_mod."};

using Entries = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // key, value

// A dict's items as Python holds them: a key set twice keeps its first place and its last value.
// Only string keys are merged; a state dict has no others.
Entries entries_of(const Graph& g, std::uint32_t dict) {
  const auto& items = g.children(dict);
  Entries out;
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
    if (g.at(items[k]).kind == Kind::string) {
      auto [it, added] = seen.try_emplace(g.str(items[k]), out.size());
      if (!added) {
        out[it->second].second = items[k + 1];
        continue;
      }
    }
    out.emplace_back(items[k], items[k + 1]);
  }
  return out;
}

bool is_state_dict(const Graph& g, const Entries& e) {
  return !e.empty() && std::all_of(e.begin(), e.end(), [&](const auto& kv) {
    return g.at(kv.first).kind == Kind::string && g.at(kv.second).kind == Kind::tensor;
  });
}

std::string quoted_key(const Graph& g, std::uint32_t key) {
  if (g.at(key).kind != Kind::string) return pickle::describe(g, key);
  const std::string& s = g.str(key);
  return "'" + (s.size() > 60 ? s.substr(0, 60) + "..." : s) + "'";
}

// "a dict with keys 'epoch', 'args' (no value a tensor; 'epoch' holds the int 3)" for messages.
std::string what_dict_holds(const Graph& g, const Entries& e) {
  if (e.empty()) return "an empty dict";
  std::string keys;
  for (std::size_t k = 0; k < e.size() && k < 8; ++k) keys += (k ? ", " : "") + quoted_key(g, e[k].first);
  if (e.size() > 8) keys += ", ... (" + std::to_string(e.size()) + " keys)";
  const auto tensors =
      std::count_if(e.begin(), e.end(), [&](const auto& kv) { return g.at(kv.second).kind == Kind::tensor; });
  const auto other = std::find_if(e.begin(), e.end(), [&](const auto& kv) {
    return g.at(kv.first).kind != Kind::string || g.at(kv.second).kind != Kind::tensor;
  });
  return "a dict with keys " + keys + " (" + std::to_string(tensors) + " of its " + std::to_string(e.size()) +
         " values are tensors; " + quoted_key(g, other->first) + " holds " + pickle::describe(g, other->second) + ")";
}

SavedTensor describe_tensor(const Graph& g, std::string name, std::uint32_t value, const std::string& where) {
  const pickle::Tensor& t = g.tensors[g.at(value).ref];
  const pickle::Storage& s = g.storages[t.storage];
  const std::string at = where + ": tensor '" + (name.size() > 200 ? name.substr(0, 200) + "..." : name) + "'";
  SavedTensor out;
  out.name = std::move(name);
  out.dtype = pickle::dtype_name(t.dtype);
  out.item_size = pickle::dtype_size(t.dtype);
  out.shape = t.shape;
  out.strides = t.strides;
  out.storage_offset = t.offset;
  out.storage_key = s.key;
  out.storage_bytes = checked_mul<std::uint64_t>(s.numel, pickle::dtype_size(s.dtype), at, "its storage's size");
  std::uint64_t numel = 1, last = t.offset;  // the element furthest into the storage
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    const auto n = static_cast<std::uint64_t>(t.shape[d]);
    numel = checked_mul<std::uint64_t>(numel, n, at, "its element count");
    if (n > 0)
      last = checked_add<std::uint64_t>(
          last, checked_mul<std::uint64_t>(n - 1, static_cast<std::uint64_t>(t.strides[d]), at, "its extent"), at,
          "its extent");
  }
  // Distinct elements need distinct bytes: more bytes than the storage holds is an expanded or
  // overlapping view, which would make a copy of it larger than the file.
  if (checked_mul<std::uint64_t>(numel, out.item_size, at, "its byte count") > out.storage_bytes)
    fail(ErrorKind::unsupported, at,
         "a tensor no larger than its storage (" + std::to_string(out.storage_bytes) + " bytes)",
         std::to_string(numel) + " elements of " + std::to_string(out.item_size) + " bytes (an expanded view)",
         "save t.contiguous() or t.clone() in its place");
  if (numel > 0) {
    out.byte_begin = checked_mul<std::uint64_t>(t.offset, out.item_size, at, "its offset");
    out.byte_end = checked_mul<std::uint64_t>(checked_add<std::uint64_t>(last, 1, at, "its extent"), out.item_size, at,
                                              "its extent");
    if (out.byte_end > out.storage_bytes)
      fail(ErrorKind::invalid, at,
           "elements inside its storage '" + s.key + "' of " + std::to_string(out.storage_bytes) + " bytes",
           "shape, strides and offset reaching byte " + std::to_string(out.byte_end),
           "the file is corrupt or crafted; save it again with torch.save");
  }
  return out;
}

}  // namespace

StateDict state_dict_of(const Graph& g, const std::string& where) {
  StateDict out;
  std::uint32_t v = g.root;
  Entries e;
  for (int level = 0;; ++level) {
    if (g.at(v).kind != Kind::dict)
      fail(ErrorKind::invalid, where, "a state dict (a dict of names to tensors)", pickle::describe(g, v),
           "save the model's state dict: torch.save(model.state_dict(), 'weights.pth')");
    e = entries_of(g, v);
    if (is_state_dict(g, e)) break;
    const auto inner = level < kMaxLevels
                           ? std::find_if(kKeys.begin(), kKeys.end(),
                                          [&](std::string_view k) {
                                            return std::any_of(e.begin(), e.end(), [&](const auto& kv) {
                                              return g.at(kv.first).kind == Kind::string && g.str(kv.first) == k &&
                                                     g.at(kv.second).kind == Kind::dict;
                                            });
                                          })
                           : kKeys.end();
    if (inner == kKeys.end())
      fail(ErrorKind::invalid, where,
           "a state dict (a dict of names to tensors), or a checkpoint holding one as 'state_dict', "
           "'model_state_dict', 'model' or 'module'",
           (level ? "under '" + out.found_under + "' " : std::string()) + what_dict_holds(g, e),
           "save the model's state dict alone: torch.save(model.state_dict(), 'weights.pth')");
    for (const auto& [k, val] : e)
      if (g.at(k).kind == Kind::string && g.str(k) == *inner) v = val;
    out.found_under += (out.found_under.empty() ? "" : ".") + std::string(*inner);
  }

  std::vector<std::string> names;
  for (const auto& kv : e) names.push_back(g.str(kv.first));
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (std::string_view p : kPrefixes)
      if (std::all_of(names.begin(), names.end(),
                      [&](const std::string& n) { return n.size() > p.size() && n.starts_with(p); })) {
        for (auto& n : names) n.erase(0, p.size());
        out.prefix_removed += p;
        stripped = true;
      }
  }
  for (std::size_t k = 0; k < e.size(); ++k)
    out.tensors.push_back(describe_tensor(g, std::move(names[k]), e[k].second, where));
  return out;
}

StateDict read_state_dict_pickle(std::span<const std::uint8_t> pickle, const std::string& where) {
  return state_dict_of(pickle::unpickle(pickle, where), where);
}

}  // namespace frugal
