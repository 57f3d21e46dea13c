// Delta checkpoints (docs/formats.md, "Delta checkpoint"): each tensor that changed since the
// base (the last full checkpoint) is stored as zstd(byte-shuffle(bits XOR base bits)). XOR makes
// unchanged bits zero; shuffling groups the bytes of equal significance (sign/exponent bytes of
// floats rarely change), which is what lets zstd find those zeros. Restoring is exact.
#include <zstd.h>

#include <cstring>
#include <unordered_map>

#include "checkpoint/internal.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

constexpr int kZstdLevel = 3;  // fast enough to hide in a background save
constexpr const char* kStoredPrefix = "delta:";
// zstd's largest decompressed/compressed ratio: a 128 KiB block stored as a 4-byte RLE block.
constexpr std::uint64_t kMaxZstdRatio = 32768;

std::string shuffle(const unsigned char* p, std::size_t n, std::size_t k) {
  std::string out(n, '\0');
  std::size_t count = n / k;
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = 0; j < k; ++j) out[j * count + i] = static_cast<char>(p[i * k + j]);
  return out;
}

void unshuffle(const unsigned char* p, std::size_t n, std::size_t k, unsigned char* out) {
  std::size_t count = n / k;
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = 0; j < k; ++j) out[i * k + j] = p[j * count + i];
}

torch::Tensor compress(const std::string& raw) {
  std::string buf(ZSTD_compressBound(raw.size()), '\0');
  std::size_t n = ZSTD_compress(buf.data(), buf.size(), raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) throw Error(ErrorKind::io, std::string("zstd: ") + ZSTD_getErrorName(n));
  auto t = torch::empty({static_cast<std::int64_t>(n)}, torch::kUInt8);
  std::memcpy(t.data_ptr(), buf.data(), n);
  return t;
}

std::string decompress(const torch::Tensor& t, std::size_t size, const std::string& where) {
  std::string out(size, '\0');
  std::size_t n = ZSTD_decompress(out.data(), size, t.data_ptr(), t.nbytes());
  if (ZSTD_isError(n) || n != size)
    fail(ErrorKind::invalid, where, std::to_string(size) + " bytes after zstd decompression",
         ZSTD_isError(n) ? ZSTD_getErrorName(n) : std::to_string(n) + " bytes", "the delta file is corrupt");
  return out;
}

std::pair<NamedTensors, Metadata> encode(const Checkpoint& ckpt, const Checkpoint& base, const std::string& base_name,
                                         const std::string& base_checksum) {
  std::unordered_map<std::string, torch::Tensor> old;
  for (auto& [n, t] : disk_tensors(base)) old[n] = t.detach().to(torch::kCPU).contiguous();
  NamedTensors stored;
  nlohmann::json index = nlohmann::json::array();
  for (auto& [name, tensor] : disk_tensors(ckpt)) {
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    auto* p = static_cast<const unsigned char*>(t.data_ptr());
    std::size_t n = t.nbytes(), k = t.element_size();
    auto it = old.find(name);
    bool comparable = it != old.end() && it->second.scalar_type() == t.scalar_type() && it->second.sizes() == t.sizes();
    std::string mode = "raw";
    std::string bits(reinterpret_cast<const char*>(p), n);
    if (comparable) {
      auto* q = static_cast<const unsigned char*>(it->second.data_ptr());
      bool same = true;
      for (std::size_t i = 0; i < n; ++i) {
        bits[i] = static_cast<char>(p[i] ^ q[i]);
        same = same && bits[i] == 0;
      }
      mode = same ? "same" : "xor";
    }
    index.push_back({name, safetensors_dtype(t.scalar_type()), t.sizes().vec(), mode});
    if (mode != "same")
      stored.emplace_back(kStoredPrefix + name,
                          compress(shuffle(reinterpret_cast<const unsigned char*>(bits.data()), n, k)));
  }
  Checkpoint meta_only = ckpt;
  meta_only.kind = "delta";
  Metadata md = checkpoint_metadata(meta_only);
  md["base"] = base_name;
  md["base_checksum"] = base_checksum;
  md["delta_index"] = index.dump();
  md["checksum"] = tensors_checksum(stored);
  return {std::move(stored), std::move(md)};
}

}  // namespace

std::string encode_delta_bytes(const Checkpoint& ckpt, const Checkpoint& base, const std::string& base_name,
                               const std::string& base_checksum) {
  auto [tensors, md] = encode(ckpt, base, base_name, base_checksum);
  return safetensors_bytes(tensors, md);
}

void save_delta_checkpoint(const fs::path& path, const Checkpoint& ckpt, const Checkpoint& base,
                           const fs::path& base_path, Env& env) {
  auto base_md = read_safetensors_header(base_path, Links::refuse).metadata;
  auto [tensors, md] = encode(ckpt, base, base_path.filename().string(), base_md["checksum"]);
  save_safetensors(path, tensors, md, env);
}

namespace {

// The base of the delta at `path` (metadata `md`): a file name in the same folder (never a path
// out of it, never the delta itself) that must be a full checkpoint with the checksum the delta
// recorded: chains are one link long, so no base can lead back here. Read once: its header is
// checked here, then the same bytes are verified and decoded.
ParsedFile read_delta_base(const fs::path& path, const fs::path& base_path, Metadata& md) {
  const std::string where = path.string();
  std::error_code ec;
  if (!fs::exists(base_path, ec))
    fail(ErrorKind::invalid, where, "its base checkpoint " + base_path.string(), "no such file",
         "the base was deleted; use another checkpoint");
  ParsedFile base_file = read_parsed_file(base_path, Links::refuse);  // beside the delta: never a link out
  auto& base_md = base_file.header.metadata;
  if (base_md["kind"] != "full")
    fail(ErrorKind::invalid, where, "a full checkpoint as base " + base_path.string(),
         "kind \"" + base_md["kind"].substr(0, 40) + "\"",
         "the delta file is damaged or crafted; use another checkpoint");
  if (base_md["checksum"] != md["base_checksum"])
    fail(ErrorKind::invalid, where, "base " + base_path.string() + " with checksum " + md["base_checksum"],
         base_md["checksum"], "the base was replaced; use another checkpoint");
  return base_file;
}

// One indexed tensor rebuilt: the base's ("same"), the stored bytes ("raw"), or the stored bytes
// xor the base's ("xor").
torch::Tensor restore_tensor(const DeltaIndexItem& item, const std::string& where,
                             const std::unordered_map<std::string, torch::Tensor>& old,
                             const std::unordered_map<std::string, const torch::Tensor*>& stored) {
  const std::string at = where + ":" + item.name;
  const auto type = torch_dtype(item.dtype, at);
  const torch::Tensor* from_base = nullptr;
  if (item.mode != "raw") {
    auto it = old.find(item.name);
    if (it == old.end() || it->second.scalar_type() != type || it->second.sizes().vec() != item.shape)
      fail(ErrorKind::invalid, at, "a base tensor of dtype " + item.dtype + " and the indexed shape",
           it == old.end() ? "none" : "another dtype or shape", "the delta file is damaged or crafted");
    from_base = &it->second;
  }
  const torch::Tensor* packed = nullptr;
  if (item.mode != "same") {
    auto s = stored.find(kStoredPrefix + item.name);
    if (s == stored.end()) fail(ErrorKind::invalid, at, "a stored delta tensor", "none", "the delta file is corrupt");
    packed = s->second;
    // Memory follows what was read, not what the index claims: a raw tensor's size is bounded
    // by its compressed bytes times zstd's largest ratio (an xor one by its base tensor, read).
    if (item.mode == "raw" && item.bytes / kMaxZstdRatio > static_cast<std::uint64_t>(packed->nbytes()))
      fail(ErrorKind::invalid, at, "at most " + std::to_string(kMaxZstdRatio) + " bytes per stored byte",
           std::to_string(item.bytes) + " bytes from " + std::to_string(packed->nbytes()),
           "the delta file is damaged or crafted");
  }
  auto t = torch::empty(item.shape, torch::TensorOptions().dtype(type));
  const std::size_t n = t.nbytes(), k = t.element_size();
  if (item.mode == "same") {
    t.copy_(*from_base);
    return t;
  }
  std::string raw = decompress(*packed, n, at);
  auto* out = static_cast<unsigned char*>(t.data_ptr());
  unshuffle(reinterpret_cast<const unsigned char*>(raw.data()), n, k, out);
  if (item.mode == "xor") {
    auto* q = static_cast<const unsigned char*>(from_base->data_ptr());
    for (std::size_t i = 0; i < n; ++i) out[i] ^= q[i];
  }
  return t;
}

}  // namespace

LoadedCheckpoint load_delta(const fs::path& path, SafetensorsFile file) {
  const std::string where = path.string();
  auto& md = file.metadata;
  if (!md.count("base") || !md.count("delta_index"))
    fail(ErrorKind::invalid, where, "metadata \"base\" and \"delta_index\" in a delta checkpoint", "none",
         "the file is corrupt");
  const fs::path base_path = delta_base_path(path, md["base"]);
  const auto index = parse_delta_index(md["delta_index"], where);
  ParsedFile base_file = read_delta_base(path, base_path, md);
  LoadedCheckpoint out;
  out.base_path = base_path;
  out.base_checksum = base_file.header.metadata["checksum"];
  Checkpoint base = base_from_parsed(base_path, std::move(base_file));
  std::unordered_map<std::string, torch::Tensor> old;
  for (auto& [n, t] : disk_tensors(base)) old[n] = t.contiguous();
  std::unordered_map<std::string, const torch::Tensor*> stored;
  for (auto& [n, t] : file.tensors) stored[n] = &t;

  SafetensorsFile restored;
  restored.source = where;
  for (const auto& item : index) restored.tensors.emplace_back(item.name, restore_tensor(item, where, old, stored));
  md.erase("base");
  md.erase("base_checksum");
  md.erase("delta_index");
  md["kind"] = "full";
  restored.metadata = md;
  out.ckpt = checkpoint_from_file(std::move(restored));
  old.clear();
  out.base = std::move(base);
  return out;
}

}  // namespace frugal
