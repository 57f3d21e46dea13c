// CIFAR's batch files and class names (cifar.h).
#include "archive/cifar.h"

#include <algorithm>
#include <cstring>

#include "frugal/util/error.h"
#include "frugal/util/pickle.h"

namespace frugal::cifar {
namespace {

constexpr const char* kRedownload = "the file is damaged, truncated or not CIFAR's; download it again";

// The value under `key` (a str or bytes key: Python 2's str is bytes) of the dict at the root.
std::optional<std::uint32_t> lookup(const pickle::Graph& g, const std::string& key) {
  const pickle::Value& root = g.at(g.root);
  if (root.kind != pickle::Kind::dict) return std::nullopt;
  const auto& items = g.children(g.root);
  for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
    const pickle::Kind kind = g.at(items[k]).kind;
    if ((kind == pickle::Kind::string || kind == pickle::Kind::bytes) && g.str(items[k]) == key) return items[k + 1];
  }
  return std::nullopt;
}

pickle::Graph run(std::span<const std::uint8_t> bytes, const std::string& where) {
  pickle::Limits limits;
  limits.profile = pickle::Profile::numpy_arrays;
  pickle::Graph g = pickle::unpickle(bytes, where, limits);
  if (g.at(g.root).kind != pickle::Kind::dict)
    fail(ErrorKind::invalid, where, "a pickled dict (a CIFAR batch or meta file)", pickle::describe(g, g.root),
         kRedownload);
  return g;
}

std::uint32_t need(const pickle::Graph& g, const std::string& key, const std::string& where) {
  if (auto v = lookup(g, key)) return *v;
  fail(ErrorKind::invalid, where, "the key b'" + key + "' (a CIFAR batch or meta file)", "a dict without it",
       kRedownload);
}

std::vector<std::int64_t> int_list(const pickle::Graph& g, const std::string& key, const std::string& where) {
  const std::uint32_t v = need(g, key, where);
  if (g.at(v).kind != pickle::Kind::list)
    fail(ErrorKind::invalid, where, "b'" + key + "' as a list of ints", pickle::describe(g, v), kRedownload);
  std::vector<std::int64_t> out;
  out.reserve(g.children(v).size());
  for (const std::uint32_t item : g.children(v)) {
    if (g.at(item).kind != pickle::Kind::integer)
      fail(ErrorKind::invalid, where, "b'" + key + "' as a list of ints",
           "an item that is " + pickle::describe(g, item), kRedownload);
    out.push_back(g.at(item).i);
  }
  return out;
}

void check_count(const std::vector<std::int64_t>& labels, std::size_t rows, const std::string& key,
                 const std::string& where) {
  if (labels.size() != rows)
    fail(ErrorKind::invalid, where, "a label in b'" + key + "' for each of the " + std::to_string(rows) + " images",
         std::to_string(labels.size()) + " labels", kRedownload);
}

void put_le(std::uint8_t* out, std::size_t at, std::uint32_t v, int n) {
  for (int k = 0; k < n; ++k) out[at + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(v >> (8 * k));
}

}  // namespace

Batch parse_pickle_batch(std::span<const std::uint8_t> bytes, const std::string& where, bool cifar100) {
  pickle::Graph g = run(bytes, where);
  const std::uint32_t data = need(g, "data", where);
  if (g.at(data).kind != pickle::Kind::array)
    fail(ErrorKind::invalid, where, "b'data' as a numpy uint8 array", pickle::describe(g, data), kRedownload);
  const pickle::Array& a = g.arrays[g.at(data).ref];
  if (!a.built || a.shape.size() != 2 || a.shape[1] != static_cast<std::int64_t>(kPixels)) {
    std::string shape;
    for (const std::int64_t d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    fail(ErrorKind::invalid, where, "b'data' of shape (N, 3072): N images of 32x32x3", "shape (" + shape + ")",
         kRedownload);
  }
  Batch b;
  b.rows = static_cast<std::size_t>(a.shape[0]);  // the machine checked rows * 3072 against its bytes
  b.fine = int_list(g, cifar100 ? "fine_labels" : "labels", where);
  check_count(b.fine, b.rows, cifar100 ? "fine_labels" : "labels", where);
  if (cifar100) {
    b.coarse = int_list(g, "coarse_labels", where);
    check_count(b.coarse, b.rows, "coarse_labels", where);
  }
  b.data = std::move(g.strings[a.data]);
  return b;
}

Batch parse_record_file(std::string bytes, const std::string& where, bool cifar100) {
  const std::size_t head = cifar100 ? 2 : 1, stride = head + kPixels;
  if (bytes.empty() || bytes.size() % stride != 0)
    fail(ErrorKind::invalid, where,
         std::string("records of ") + std::to_string(stride) + " bytes (" +
             (cifar100 ? "coarse and fine label bytes" : "a label byte") + ", then 3072 pixel bytes)",
         std::to_string(bytes.size()) + " bytes, not a whole number of records", kRedownload);
  Batch b;
  b.stride = stride;
  b.offset = head;
  b.rows = bytes.size() / stride;
  b.fine.resize(b.rows);
  if (cifar100) b.coarse.resize(b.rows);
  for (std::size_t r = 0; r < b.rows; ++r) {
    const auto* rec = reinterpret_cast<const std::uint8_t*>(bytes.data()) + r * stride;
    b.fine[r] = cifar100 ? rec[1] : rec[0];
    if (cifar100) b.coarse[r] = rec[0];
  }
  b.data = std::move(bytes);
  return b;
}

std::vector<std::string> parse_pickle_names(std::span<const std::uint8_t> bytes, const std::string& where,
                                            const std::string& key) {
  const pickle::Graph g = run(bytes, where);
  const std::uint32_t v = need(g, key, where);
  if (g.at(v).kind != pickle::Kind::list)
    fail(ErrorKind::invalid, where, "b'" + key + "' as a list of names", pickle::describe(g, v), kRedownload);
  std::vector<std::string> names;
  for (const std::uint32_t item : g.children(v)) {
    const pickle::Kind k = g.at(item).kind;
    if (k != pickle::Kind::string && k != pickle::Kind::bytes)
      fail(ErrorKind::invalid, where, "b'" + key + "' as a list of names",
           "an item that is " + pickle::describe(g, item), kRedownload);
    names.push_back(g.str(item));
  }
  return names;
}

std::vector<std::string> parse_name_lines(std::string_view text) {
  std::vector<std::string> names;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (!line.empty()) names.emplace_back(line);
    at = end + 1;
  }
  return names;
}

std::optional<Layout> layout_of(const std::vector<std::string>& names) {
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  auto has_prefix = [&](std::string_view p, std::string_view suffix) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return n.size() > p.size() + suffix.size() && n.compare(0, p.size(), p) == 0 &&
             n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
  };
  if (has("batches.meta") && (has_prefix("data_batch_", "") || has("test_batch"))) return Layout::python10;
  if (has("meta") && (has("train") || has("test"))) return Layout::python100;
  if (has("batches.meta.txt") && (has_prefix("data_batch_", ".bin") || has("test_batch.bin"))) return Layout::binary10;
  if (has("fine_label_names.txt") && has("coarse_label_names.txt") && (has("train.bin") || has("test.bin")))
    return Layout::binary100;
  return std::nullopt;
}

bool is_cifar_file(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "batches.meta",          "test_batch",     "meta",      "train",    "test",
      "batches.meta.txt",      "test_batch.bin", "train.bin", "test.bin", "fine_label_names.txt",
      "coarse_label_names.txt"};
  for (const auto k : kNames)
    if (n == k) return true;
  constexpr std::string_view p = "data_batch_";
  if (n.size() <= p.size() || n.compare(0, p.size(), p) != 0) return false;
  std::string_view rest = n.substr(p.size());
  if (rest.size() > 4 && rest.substr(rest.size() - 4) == ".bin") rest.remove_suffix(4);
  return !rest.empty() && rest.size() <= 3 &&
         std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_cifar_folder_name(std::string_view name) {
  return name == "cifar-10-batches-py" || name == "cifar-100-python" || name == "cifar-10-batches-bin" ||
         name == "cifar-100-binary";
}

// BITMAPINFOHEADER, 24 bits, uncompressed, rows bottom-up in B, G, R order; a row is 96 bytes, a
// multiple of 4, so there is no padding.
void bmp_of_record(const std::uint8_t* planar, std::vector<std::uint8_t>& out) {
  out.resize(kBmpBytes);
  bmp_of_record(planar, out.data());
}

void bmp_of_record(const std::uint8_t* planar, std::uint8_t* out) {
  std::memset(out, 0, kBmpHeader);
  out[0] = 'B';
  out[1] = 'M';
  put_le(out, 2, static_cast<std::uint32_t>(kBmpBytes), 4);
  put_le(out, 10, static_cast<std::uint32_t>(kBmpHeader), 4);
  put_le(out, 14, 40, 4);
  put_le(out, 18, static_cast<std::uint32_t>(kSide), 4);
  put_le(out, 22, static_cast<std::uint32_t>(kSide), 4);
  put_le(out, 26, 1, 2);
  put_le(out, 28, 24, 2);
  put_le(out, 34, static_cast<std::uint32_t>(kPixels), 4);
  constexpr std::size_t plane = kSide * kSide;
  std::uint8_t* px = out + kBmpHeader;
  for (std::size_t y = 0; y < kSide; ++y) {
    const std::size_t src = (kSide - 1 - y) * kSide;  // bottom-up
    for (std::size_t x = 0; x < kSide; ++x, px += 3) {
      px[0] = planar[2 * plane + src + x];
      px[1] = planar[plane + src + x];
      px[2] = planar[src + x];
    }
  }
}

}  // namespace frugal::cifar
