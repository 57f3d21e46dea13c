// The safetensors header parser and a delta checkpoint's metadata, torch-free: every checkpoint
// and model read goes through here first (lengths, offsets, dtype x shape), and so do the fuzzers.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <set>

#include "frugal/util/checked.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

// A header larger than this is not one we wrote or would read (safetensors itself caps at 100 MB).
constexpr std::uint64_t kMaxHeader = 100ull << 20;

std::atomic<std::uint64_t> header_parses{0};

std::uint64_t read_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Element count of `shape` times `elem` bytes, or Error(invalid) on a negative dimension or an
// overflow: the product must never wrap into a small size that then passes the offset checks.
std::uint64_t shape_bytes(const nlohmann::json& shape, std::uint64_t elem, const std::string& where) {
  std::uint64_t n = elem;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned())
      fail(ErrorKind::invalid, where, "non-negative integer dimensions", d.dump(), "the file is corrupt");
    n = checked_mul<std::uint64_t>(n, d.get<std::uint64_t>(), where, "dtype size x shape");
  }
  return n;
}

SafetensorsHeader parse_header_json(std::string_view json_text, std::uint64_t header_size, const std::string& name) {
  header_parses.fetch_add(1, std::memory_order_relaxed);
  SafetensorsHeader h;
  h.header_size = header_size;
  // A safetensors header is 3 levels deep: {name: {"shape": [dims]}}.
  nlohmann::json j = parse_json_bounded(json_text, name, 8);
  if (!j.is_object())
    fail(ErrorKind::invalid, name, "a JSON object as safetensors header", j.type_name(), "the file is not safetensors");
  h.tensors = nlohmann::json::object();
  for (auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(ErrorKind::invalid, name, "\"__metadata__\" as a string map", value.type_name(), "");
      for (auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail(ErrorKind::invalid, name, "string metadata values", "\"" + mk + "\": " + mv.type_name(), "");
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = name + ":" + key;
    const auto* offs = value.is_object() && value.contains("data_offsets") ? &value["data_offsets"] : nullptr;
    if (!offs || !offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned() ||
        !(*offs)[1].is_number_unsigned() || !value.contains("dtype") || !value["dtype"].is_string() ||
        !value.contains("shape") || !value["shape"].is_array())
      fail(ErrorKind::invalid, where, "{\"dtype\", \"shape\", \"data_offsets\"}", value.dump().substr(0, 200),
           "the file is corrupt or not safetensors");
    auto begin = (*offs)[0].get<std::uint64_t>(), end = (*offs)[1].get<std::uint64_t>();
    if (end < begin) fail(ErrorKind::invalid, where, "data_offsets begin <= end", offs->dump(), "the file is corrupt");
    // dtype x shape must be the byte count the offsets give. Unknown dtypes (safetensors has more
    // than frugal reads) are left to the tensor loader, which names them; their shapes are still
    // checked for overflow.
    const std::uint64_t elem = safetensors_dtype_size(value["dtype"].get<std::string>());
    const std::uint64_t bytes = shape_bytes(value["shape"], elem ? elem : 1, where);
    if (elem && bytes != end - begin)
      fail(ErrorKind::invalid, where, std::to_string(bytes) + " bytes for its dtype and shape",
           std::to_string(end - begin) + " bytes in data_offsets", "the file is corrupt");
    h.payload_size = std::max(h.payload_size, end);
    h.tensors[key] = value;
  }
  return h;
}

// What a file given where a model belongs is, by its first bytes, when it is a format users mix up
// with one (the data archive, an image, a PyTorch .pt file); "" when not recognised.
std::string other_format(const unsigned char* b) {
  if (b[0] == 'P' && b[1] == 'K' && ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6)))
    return "a zip archive (a dataset, or PyTorch's torch.save format, .pt/.pth)";
  if (b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return "a JPEG image";
  if (b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') return "a PNG image";
  if (b[0] == 0x1F && b[1] == 0x8B) return "a gzip file";
  if (b[0] == '{') return "a JSON file";
  return "";
}

// The header length field against the file size, without wrapping: 8 + n must fit in `size`.
// `first` holds the file's first 8 bytes (the length field).
void check_header_length(std::uint64_t n, std::uint64_t size, const std::string& name, const unsigned char* first) {
  if (n > kMaxHeader || !range_inside(8, n, size))
    if (std::string other = other_format(first); !other.empty())
      fail(ErrorKind::usage, name, "a model: a run folder or a safetensors file (.safetensors)", other,
           "give the run folder or its checkpoint; a PyTorch .pt file converts with safetensors.torch.save_file");
  if (n > kMaxHeader || !range_inside(8, n, size))
    fail(ErrorKind::invalid, name, "a header of at most " + std::to_string(std::min(size - 8, kMaxHeader)) + " bytes",
         "a header length of " + std::to_string(n), "the file is truncated or not safetensors");
}

// Every tensor's data must lie inside the file: payload_offset + payload_size <= size, computed
// without wrapping (an end offset near 2^64 once wrapped the sum and let reads run past the end).
void check_payload_inside(const SafetensorsHeader& h, std::uint64_t size, const std::string& name) {
  if (!range_inside(h.payload_offset(), h.payload_size, size))
    fail(ErrorKind::invalid, name,
         "tensor data inside the file's " + std::to_string(size - h.payload_offset()) + " payload bytes",
         "data_offsets ending at byte " + std::to_string(h.payload_size) + " of the payload",
         "the file is truncated or crafted; use an earlier checkpoint");
}

// The parsers' own exceptions (nlohmann's type errors, std::bad_alloc on a claimed size, ...)
// become frugal's bad-input error here, at the boundary: exit 3 naming the file.
template <class Fn>
auto at_parser_boundary(const std::string& name, const char* expected, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(ErrorKind::invalid, name, expected, e.what(), "the file is corrupt or crafted");
  }
}

}  // namespace

nlohmann::json parse_json_bounded(std::string_view text, const std::string& where, int max_depth) {
  auto limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_depth)
      fail(ErrorKind::invalid, where, "JSON nested at most " + std::to_string(max_depth) + " levels deep",
           "deeper nesting", "the file is corrupt or crafted");
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::invalid, where, "JSON", std::string("unparsable text (") + e.what() + ")",
         "the file is corrupt or crafted");
  }
}

std::uint64_t safetensors_header_parses() { return header_parses.load(std::memory_order_relaxed); }

std::size_t safetensors_dtype_size(std::string_view dtype) {
  static const std::pair<std::string_view, std::size_t> sizes[] = {
      {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4},  {"U32", 4},     {"F16", 2},    {"BF16", 2},
      {"I16", 2}, {"U16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [n, s] : sizes)
    if (n == dtype) return s;
  return 0;
}

SafetensorsHeader parse_safetensors_header(const void* data, std::size_t size, const std::string& name) {
  return at_parser_boundary(name, "a safetensors header", [&] {
    auto* p = static_cast<const unsigned char*>(data);
    if (size < 8)
      fail(ErrorKind::invalid, name, "at least 8 bytes (safetensors header length)", std::to_string(size) + " bytes",
           "the file is truncated; use an earlier checkpoint");
    std::uint64_t n = read_le64(p);
    check_header_length(n, size, name, p);
    auto h = parse_header_json(std::string_view(reinterpret_cast<const char*>(p + 8), n), n, name);
    check_payload_inside(h, size, name);
    return h;
  });
}

SafetensorsHeader read_safetensors_header(const fs::path& path, Links links) {
  return at_parser_boundary(path.string(), "a safetensors header", [&] {
    UniqueFd fd = open_regular(path, links);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail_errno("stat", path.string(), errno);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    unsigned char len[8];
    if (size < 8)
      fail(ErrorKind::invalid, path.string(), "at least 8 bytes (safetensors header length)",
           std::to_string(size) + " bytes", "the file is truncated; use an earlier checkpoint");
    pread_full(fd.get(), len, 8, 0, path.string());
    std::uint64_t n = read_le64(len);
    check_header_length(n, size, path.string(), reinterpret_cast<const unsigned char*>(len));
    std::string json(n, '\0');
    pread_full(fd.get(), json.data(), n, 8, path.string());
    auto h = parse_header_json(json, n, path.string());
    check_payload_inside(h, size, path.string());
    return h;
  });
}

std::vector<DeltaIndexItem> parse_delta_index(std::string_view text, const std::string& where) {
  return at_parser_boundary(where, "a delta index", [&] {
    nlohmann::json index = parse_json_bounded(text, where + ": metadata \"delta_index\"", 4);
    if (!index.is_array())
      fail(ErrorKind::invalid, where, "a JSON array in metadata \"delta_index\"", index.type_name(),
           "the file is corrupt");
    std::vector<DeltaIndexItem> out;
    std::set<std::string> seen;
    for (const auto& item : index) {
      if (!item.is_array() || item.size() != 4 || !item[0].is_string() || !item[1].is_string() || !item[2].is_array() ||
          !item[3].is_string())
        fail(ErrorKind::invalid, where, "delta_index items [NAME, DTYPE, SHAPE, MODE]", item.dump().substr(0, 200),
             "the file is corrupt");
      DeltaIndexItem d;
      d.name = item[0].get<std::string>();
      d.dtype = item[1].get<std::string>();
      d.mode = item[3].get<std::string>();
      const std::string at = where + ":" + d.name;
      if (!seen.insert(d.name).second)
        fail(ErrorKind::invalid, at, "each tensor once in delta_index", "a duplicate", "the file is corrupt");
      if (d.mode != "same" && d.mode != "xor" && d.mode != "raw")
        fail(ErrorKind::invalid, at, "mode same, xor or raw", "\"" + d.mode.substr(0, 40) + "\"",
             "the file is corrupt");
      const std::uint64_t elem = safetensors_dtype_size(d.dtype);
      if (!elem)
        fail(ErrorKind::unsupported, at, "a known safetensors dtype", "\"" + d.dtype.substr(0, 40) + "\"",
             "the file is corrupt or from a newer frugal");
      d.bytes = shape_bytes(item[2], elem, at);
      for (const auto& dim : item[2])
        d.shape.push_back(checked_cast<std::int64_t>(dim.get<std::uint64_t>(), at, "a dimension"));
      out.push_back(std::move(d));
    }
    return out;
  });
}

fs::path delta_base_path(const fs::path& delta_file, std::string_view base) {
  const std::string where = delta_file.string() + ": metadata \"base\"";
  const std::string norm = normalize_relative(base);
  if (norm.empty() || norm.find('/') != std::string::npos)
    fail(ErrorKind::invalid, where, "the file name of a full checkpoint in the same folder",
         "'" + std::string(base.substr(0, 200)) + "'", "the delta file is damaged or crafted; use another checkpoint");
  if (norm == delta_file.filename().string())
    fail(ErrorKind::invalid, where, "another checkpoint as base", "the delta itself",
         "the delta file is damaged or crafted; use another checkpoint");
  return confine_path(delta_file.parent_path().empty() ? fs::path(".") : delta_file.parent_path(), norm, where);
}

}  // namespace frugal
