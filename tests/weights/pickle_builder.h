// Test helper: pickles written opcode by opcode (as CPython's pickletools lists them), so that tests
// can craft what no pickler writes, and torch.save-shaped zips around them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "archive/zip_read_fixture.h"

namespace frugal::testing {

struct Pickle {
  std::string s = "\x80\x02";  // PROTO 2

  Pickle& raw(const std::string& bytes) {
    s += bytes;
    return *this;
  }
  Pickle& op(char c) {
    s += c;
    return *this;
  }
  Pickle& mark() { return op('('); }
  Pickle& str(const std::string& v) {
    s += 'X';
    put32(s, static_cast<std::uint32_t>(v.size()));
    s += v;
    return *this;
  }
  Pickle& int1(std::uint8_t v) {
    s += 'K';
    s += static_cast<char>(v);
    return *this;
  }
  Pickle& int4(std::int32_t v) {
    s += 'J';
    put32(s, static_cast<std::uint32_t>(v));
    return *this;
  }
  Pickle& long8(std::int64_t v) {  // LONG1 of 8 bytes
    s += "\x8a\x08";
    put64(s, static_cast<std::uint64_t>(v));
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    s += 'c' + module + '\n' + name + '\n';
    return *this;
  }
  Pickle& ints(const std::vector<std::int64_t>& v) {  // a tuple of ints
    mark();
    for (auto x : v) long8(x);
    return op('t');
  }
  Pickle& empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    return op('R');
  }
  // _rebuild_tensor_v2(storage ('storage', torch.<cls>, key, 'cpu', numel), offset, shape, strides,
  // False, OrderedDict())
  Pickle& tensor(const std::string& key, std::int64_t numel, std::int64_t offset,
                 const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides,
                 const std::string& cls = "FloatStorage", const std::string& location = "cpu") {
    global("torch._utils", "_rebuild_tensor_v2");
    mark();
    mark().str("storage").global("torch", cls).str(key).str(location).long8(numel).op('t').op('Q');
    long8(offset).ints(shape).ints(strides).op('\x89').empty_ordered_dict();
    op('t');
    return op('R');
  }
  Pickle& stop() { return op('.'); }
};

// {"<name>": float tensor of `shape`, C order, over storage "0"} as torch.save pickles it.
inline std::string one_tensor_pickle(const std::string& name, const std::vector<std::int64_t>& shape) {
  std::int64_t numel = 1;
  for (auto d : shape) numel *= d;
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t st = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = st;
    st *= shape[d];
  }
  Pickle p;
  p.op('}').mark().str(name).tensor("0", numel, 0, shape, strides).op('u').stop();
  return p.s;
}

// A torch.save zip: archive/data.pkl, archive/byteorder, then the records given (name under
// archive/, bytes).
inline std::string torch_zip(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& records,
                             const std::string& byteorder = "little") {
  std::vector<TestEntry> entries = {{"archive/data.pkl", pickle}};
  if (!byteorder.empty()) entries.push_back({"archive/byteorder", byteorder});
  for (const auto& [name, data] : records) entries.push_back({"archive/" + name, data});
  entries.push_back({"archive/version", "3\n"});
  return build_zip(entries);
}

}  // namespace frugal::testing
