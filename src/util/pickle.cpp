// The data-only pickle machine (pickle.h). Opcode semantics follow CPython's Lib/pickle.py
// (_Unpickler) and Lib/pickletools.py; the globals and the calls made of them follow
// torch/serialization.py (_save's persistent ids) and torch/_utils.py (the _rebuild_* functions);
// numpy's arrays follow numpy/_core/src/multiarray/methods.c (array_reduce_ex, array_setstate) and
// descriptor.c (arraydescr_reduce).
#include "frugal/util/pickle.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "frugal/util/error.h"

namespace frugal::pickle {
namespace {

constexpr std::uint32_t kNone = 0, kFalse = 1, kTrue = 2;  // preallocated, shared by every use

struct KnownGlobal {
  std::string_view module, name;
  Global global;
  Dtype dtype;
};

// Everything a state dict names. The storage classes are torch's legacy typed ones (what torch.save
// writes for a tensor of one of these dtypes, torch.storage._dtype_to_storage_type_map) and the
// untyped one (a raw storage, or a tensor of a newer dtype with _rebuild_tensor_v3).
constexpr KnownGlobal kGlobals[] = {
    {"collections", "OrderedDict", Global::ordered_dict, Dtype::u8},
    {"torch._utils", "_rebuild_tensor_v2", Global::rebuild_tensor_v2, Dtype::u8},
    {"torch._utils", "_rebuild_tensor_v3", Global::rebuild_tensor_v3, Dtype::u8},
    {"torch._utils", "_rebuild_parameter", Global::rebuild_parameter, Dtype::u8},
    {"torch._utils", "_rebuild_parameter_with_state", Global::rebuild_parameter_with_state, Dtype::u8},
    {"torch", "DoubleStorage", Global::storage_class, Dtype::f64},
    {"torch", "FloatStorage", Global::storage_class, Dtype::f32},
    {"torch", "HalfStorage", Global::storage_class, Dtype::f16},
    {"torch", "BFloat16Storage", Global::storage_class, Dtype::bf16},
    {"torch", "LongStorage", Global::storage_class, Dtype::i64},
    {"torch", "IntStorage", Global::storage_class, Dtype::i32},
    {"torch", "ShortStorage", Global::storage_class, Dtype::i16},
    {"torch", "CharStorage", Global::storage_class, Dtype::i8},
    {"torch", "ByteStorage", Global::storage_class, Dtype::u8},
    {"torch", "BoolStorage", Global::storage_class, Dtype::boolean},
    {"torch", "UntypedStorage", Global::storage_class, Dtype::u8},
    {"torch.storage", "UntypedStorage", Global::storage_class, Dtype::u8},
    {"torch", "float64", Global::dtype, Dtype::f64},
    {"torch", "float32", Global::dtype, Dtype::f32},
    {"torch", "float16", Global::dtype, Dtype::f16},
    {"torch", "bfloat16", Global::dtype, Dtype::bf16},
    {"torch", "int64", Global::dtype, Dtype::i64},
    {"torch", "int32", Global::dtype, Dtype::i32},
    {"torch", "int16", Global::dtype, Dtype::i16},
    {"torch", "int8", Global::dtype, Dtype::i8},
    {"torch", "uint8", Global::dtype, Dtype::u8},
    {"torch", "bool", Global::dtype, Dtype::boolean},
};

// Everything a CIFAR batch (a dict of numpy uint8 arrays, lists, numbers and strings) names, as
// Python 2's cPickle and Python 3 with numpy 1 or 2 write it: nothing else is ever looked up.
constexpr KnownGlobal kNumpyGlobals[] = {
    {"numpy.core.multiarray", "_reconstruct", Global::np_reconstruct, Dtype::u8},
    {"numpy._core.multiarray", "_reconstruct", Global::np_reconstruct, Dtype::u8},
    {"numpy", "ndarray", Global::np_ndarray, Dtype::u8},
    {"numpy", "dtype", Global::np_dtype, Dtype::u8},
    {"numpy.core.numeric", "_frombuffer", Global::np_frombuffer, Dtype::u8},
    {"numpy._core.numeric", "_frombuffer", Global::np_frombuffer, Dtype::u8},
    {"_codecs", "encode", Global::codecs_encode, Dtype::u8},
};

// Globals torch.load itself allows (they run no code of the file's choosing) that describe tensors
// frugal does not read: said as such rather than as a danger.
struct Unread {
  std::string_view prefix, what;
};
constexpr Unread kUnread[] = {
    {"torch.Complex", "complex tensors"},
    {"torch.QInt", "quantized tensors"},
    {"torch.QUInt", "quantized tensors"},
    {"torch.qint", "quantized tensors"},
    {"torch.quint", "quantized tensors"},
    {"torch.complex", "complex tensors"},
    {"torch.float8_", "float8 tensors"},
    {"torch.float4_", "float4 tensors"},
    {"torch.uint16", "uint16 tensors"},
    {"torch.uint32", "uint32 tensors"},
    {"torch.uint64", "uint64 tensors"},
    {"torch._utils._rebuild_qtensor", "quantized tensors"},
    {"torch._utils._rebuild_sparse", "sparse tensors"},
    {"torch._utils._rebuild_nested", "nested tensors"},
    {"torch._utils._rebuild_meta", "tensors without data (device meta)"},
    {"torch._utils._rebuild_wrapper_subclass", "tensor subclasses"},
    {"torch._utils._rebuild_device_tensor", "tensors saved from numpy on a device"},
    {"torch._tensor._rebuild_from_type", "tensor subclasses"},
};

class Machine {
 public:
  Machine(std::span<const std::uint8_t> bytes, const std::string& where, const Limits& limits)
      : bytes_(bytes), where_(limits.profile == Profile::numpy_arrays ? where : where + ": data.pkl"), limits_(limits) {
    add({Kind::none});
    add({Kind::boolean, 0, 0, 0});
    add({Kind::boolean, 0, 0, 1});
  }

  Graph run() {
    while (true) {
      op_at_ = pos_;
      const std::uint8_t op = u8();
      if (op == '.') {
        g_.root = pop();
        return std::move(g_);
      }
      step(op);
    }
  }

 private:
  // ---- bytes ----
  bool numpy() const { return limits_.profile == Profile::numpy_arrays; }
  [[noreturn]] void bad(const std::string& expected, const std::string& found, const std::string& hint = "") const {
    fail(ErrorKind::invalid, where_, expected, found + " at byte " + std::to_string(op_at_),
         !hint.empty() ? hint
         : numpy()     ? "the file is corrupt or crafted; download it again"
                       : "the file is corrupt or crafted; save it again with torch.save");
  }
  const std::uint8_t* take(std::uint64_t n) {
    if (n > bytes_.size() - pos_) bad(std::to_string(n) + " more bytes", "the end of the pickle");
    const std::uint8_t* p = bytes_.data() + pos_;
    pos_ += static_cast<std::size_t>(n);
    return p;
  }
  std::uint64_t le(int n) {
    const std::uint8_t* p = take(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
    return v;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(le(1)); }
  std::string line() {  // GLOBAL's module and name, each ended by '\n'
    const auto* begin = bytes_.data() + pos_;
    const auto* nl = static_cast<const std::uint8_t*>(std::memchr(begin, '\n', bytes_.size() - pos_));
    if (!nl) bad("a name ended by a newline", "the end of the pickle");
    std::string s(reinterpret_cast<const char*>(begin), static_cast<std::size_t>(nl - begin));
    pos_ += s.size() + 1;
    return s;
  }

  // ---- values ----
  std::uint32_t add(Value v) {
    if (g_.values.size() >= limits_.max_values)
      bad("at most " + std::to_string(limits_.max_values) + " values, as a state dict of many tensors holds", "more",
          "this is not a state dict frugal reads");
    g_.values.push_back(v);
    return static_cast<std::uint32_t>(g_.values.size() - 1);
  }
  std::uint32_t add_string(Kind kind, const std::uint8_t* p, std::uint64_t n) {
    g_.strings.emplace_back(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    return add({kind, 0, static_cast<std::uint32_t>(g_.strings.size() - 1), 0});
  }
  std::uint32_t add_container(Kind kind, std::vector<std::uint32_t> items = {}) {
    g_.items.push_back(std::move(items));
    return add({kind, 0, static_cast<std::uint32_t>(g_.items.size() - 1), 0});
  }
  std::uint32_t add_int(std::int64_t i) { return add({Kind::integer, 0, 0, i}); }

  const Value& at(std::uint32_t v) const { return g_.values[v]; }
  bool is(std::uint32_t v, Kind k) const { return at(v).kind == k; }
  bool is_global(std::uint32_t v, Global gl) const {
    return is(v, Kind::global) && at(v).sub == static_cast<std::uint8_t>(gl);
  }

  // ---- stack and marks ----
  // Pushes are counted as values are: DUP and BINGET push without adding one.
  void push(std::uint32_t v) {
    if (++pushes_ > 2 * limits_.max_values)
      bad("at most " + std::to_string(2 * limits_.max_values) + " values pushed", "more",
          "this is not a state dict frugal reads");
    stack_.push_back(v);
  }
  std::uint32_t pop() {
    if (stack_.size() <= floor()) bad("a value on the stack", "none (above the last mark)");
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::uint32_t& top() {
    if (stack_.size() <= floor()) bad("a value on the stack", "none (above the last mark)");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<std::uint32_t> pop_mark() {
    if (marks_.empty()) bad("a MARK before this opcode", "none");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  std::vector<std::uint32_t>& container(std::uint32_t v, Kind kind, const char* op) {
    if (!is(v, kind)) bad(std::string(op) + " on a " + kind_word(kind), describe(g_, v));
    return g_.items[at(v).ref];
  }
  static const char* kind_word(Kind k) {
    return k == Kind::list ? "list" : k == Kind::dict ? "dict" : k == Kind::set ? "set" : "value";
  }

  // ---- memo ----
  void put(std::uint64_t index) {
    // Python's pickler numbers memo entries 0, 1, 2, ...: an index past the pickle's length cannot
    // come from one, and would only make the memo a way to spend memory.
    // Nor does it memoize a value twice, so the memo never holds more entries than there are values.
    if (index >= bytes_.size()) bad("a memo index below the pickle's length", "index " + std::to_string(index));
    if (memo_.size() >= g_.values.size() && !memo_.count(static_cast<std::uint32_t>(index)))
      bad("at most one memo entry per value", "more entries than values");
    memo_[static_cast<std::uint32_t>(index)] = top();
  }
  void get(std::uint64_t index) {
    const auto it = memo_.find(static_cast<std::uint32_t>(index));
    if (index > UINT32_MAX || it == memo_.end()) bad("a memo index stored before", "index " + std::to_string(index));
    push(it->second);
  }

  // ---- globals and calls ----
  std::uint32_t global(const std::string& module, const std::string& name) {
    const std::span<const KnownGlobal> known = numpy() ? std::span<const KnownGlobal>(kNumpyGlobals) : kGlobals;
    for (const auto& k : known)
      if (k.module == module && k.name == name)
        return add({Kind::global, static_cast<std::uint8_t>(k.global), 0, static_cast<std::int64_t>(k.dtype)});
    const std::string full = printable_name(module + "." + name);
    if (numpy())
      bad("only what a CIFAR batch holds (numpy uint8 arrays, lists, numbers, strings)", "the global " + full,
          "refusing to load " + full +
              ": it could run code; only numpy arrays and plain data are read, and nothing "
              "was run. Use the file as its maintainers publish it");
    for (const auto& u : kUnread)
      if (full.compare(0, u.prefix.size(), u.prefix) == 0)
        fail(ErrorKind::unsupported, where_, "tensors of F64, F32, F16, BF16, I64, I32, I16, I8, U8 or BOOL",
             std::string(u.what) + " (" + full + ")",
             "convert them to one of these in Python before torch.save (for example t.float())");
    bad("only what a state dict holds (tensors, numbers, strings, lists, dicts)", "the global " + full,
        "refusing to load " + full +
            ": it could run code; only state dicts are read, and nothing was run. "
            "If you trust the file, save just the weights from Python, torch.save(model.state_dict(), "
            "'weights.pth'), and give that");
  }
  static std::string printable_name(std::string s) {
    if (s.size() > 200) s = s.substr(0, 200) + "...";
    return s;
  }

  std::uint32_t call(std::uint32_t callable, std::uint32_t args, const char* op) {
    if (!is(args, Kind::tuple)) bad(std::string(op) + " arguments in a tuple", describe(g_, args));
    const auto a = g_.items[at(args).ref];  // a copy: adding values below may move g_.items
    if (numpy()) return call_numpy(callable, a, op);
    if (is_global(callable, Global::ordered_dict)) {
      if (!a.empty()) bad("OrderedDict() called without arguments", std::to_string(a.size()) + " arguments");
      return add_container(Kind::dict);
    }
    if (is_global(callable, Global::rebuild_tensor_v2)) {
      if (a.size() != 6 && a.size() != 7) bad("_rebuild_tensor_v2 with 6 or 7 arguments", std::to_string(a.size()));
      return tensor(a, at(a[0]).kind == Kind::storage ? g_.storages[at(a[0]).ref].dtype : Dtype::u8,
                    a.size() == 7 ? a[6] : kNone);
    }
    if (is_global(callable, Global::rebuild_tensor_v3)) {
      if (a.size() != 7 && a.size() != 8) bad("_rebuild_tensor_v3 with 7 or 8 arguments", std::to_string(a.size()));
      if (!is_global(a[6], Global::dtype))
        bad("a torch dtype as _rebuild_tensor_v3's 7th argument", describe(g_, a[6]));
      return tensor(a, static_cast<Dtype>(at(a[6]).i), a.size() == 8 ? a[7] : kNone);
    }
    if (is_global(callable, Global::rebuild_parameter) || is_global(callable, Global::rebuild_parameter_with_state)) {
      const std::size_t n = is_global(callable, Global::rebuild_parameter) ? 3 : 4;
      if (a.size() != n) bad("_rebuild_parameter with " + std::to_string(n) + " arguments", std::to_string(a.size()));
      if (!is(a[0], Kind::tensor)) bad("a tensor as a Parameter's data", describe(g_, a[0]));
      if (!is(a[1], Kind::boolean)) bad("requires_grad as a bool", describe(g_, a[1]));
      if (!is(a[2], Kind::dict)) bad("backward hooks as a dict", describe(g_, a[2]));
      return a[0];  // a Parameter is its data here; its state (with_state) is Python attributes
    }
    bad(std::string(op) + " only on OrderedDict and torch's tensor rebuilders", "a call of " + describe(g_, callable));
  }

  // ---- numpy (Profile::numpy_arrays) ----
  bool is_text(std::uint32_t v) const { return is(v, Kind::string) || is(v, Kind::bytes); }
  std::uint32_t call_numpy(std::uint32_t callable, const std::vector<std::uint32_t>& a, const char* op) {
    if (is_global(callable, Global::codecs_encode)) return latin1(a);
    if (is_global(callable, Global::np_dtype)) {  // dtype('u1', align, copy)
      if (a.size() != 3 || !is_text(a[0])) bad("numpy.dtype('u1', ...) with 3 arguments", describe(g_, callable));
      if (g_.str(a[0]) != "u1") bad("a uint8 array (dtype 'u1')", "dtype '" + printable_name(g_.str(a[0])) + "'");
      return add({Kind::global, static_cast<std::uint8_t>(Global::dtype), 0, static_cast<std::int64_t>(Dtype::u8)});
    }
    if (is_global(callable, Global::np_reconstruct)) {  // _reconstruct(ndarray, (0,), b'b'): filled by BUILD
      if (a.size() != 3 || !is_global(a[0], Global::np_ndarray))
        bad("_reconstruct(numpy.ndarray, shape, typecode)", "other arguments");
      g_.arrays.push_back({});
      return add({Kind::array, 0, static_cast<std::uint32_t>(g_.arrays.size() - 1), 0});
    }
    if (is_global(callable, Global::np_frombuffer)) {  // _frombuffer(buffer, dtype, shape, order)
      if (a.size() != 4 || !is(a[0], Kind::bytes) || !is_global(a[1], Global::dtype) || !is_text(a[3]))
        bad("_frombuffer(bytes, dtype, shape, order)", "other arguments");
      if (g_.str(a[3]) != "C") bad("an array in C order", "order '" + printable_name(g_.str(a[3])) + "'");
      return array(ints(a[2], "an array's shape"), a[0]);
    }
    bad(std::string(op) + " only on numpy's array and dtype makers", "a call of " + describe(g_, callable));
  }
  // _codecs.encode(text, 'latin1'): the text's code points (each below 256) as bytes.
  std::uint32_t latin1(const std::vector<std::uint32_t>& a) {
    if (a.size() != 2 || !is(a[0], Kind::string) || !is(a[1], Kind::string) || g_.str(a[1]) != "latin1")
      bad("_codecs.encode(text, 'latin1')", "other arguments");
    const std::string& in = g_.str(a[0]);
    std::string out(in.size(), '\0');  // at most as many bytes as the UTF-8 text; 30 MB for a CIFAR batch
    char* o = out.data();
    const auto* p = reinterpret_cast<const std::uint8_t*>(in.data());
    const auto* end = p + in.size();
    while (p < end) {
      const std::uint8_t c = *p++;
      if (c < 0x80) {
        *o++ = static_cast<char>(c);
        continue;
      }
      if ((c & 0xfe) != 0xc2 || p == end || (*p & 0xc0) != 0x80)
        bad("latin1 text (code points below 256, as UTF-8)", "another byte");
      *o++ = static_cast<char>(((c & 0x03) << 6) | (*p++ & 0x3f));
    }
    out.resize(static_cast<std::size_t>(o - out.data()));
    g_.strings.push_back(std::move(out));
    return add({Kind::bytes, 0, static_cast<std::uint32_t>(g_.strings.size() - 1), 0});
  }
  // A built array: its bytes must be exactly its shape's product (each dimension and the product
  // checked before anything is kept).
  std::uint32_t array(std::vector<std::int64_t> shape, std::uint32_t data) {
    g_.arrays.push_back(make_array(std::move(shape), data));
    return add({Kind::array, 0, static_cast<std::uint32_t>(g_.arrays.size() - 1), 0});
  }
  Array make_array(std::vector<std::int64_t> shape, std::uint32_t data) {
    const std::uint64_t size = g_.str(data).size();
    std::uint64_t n = 1;
    for (const std::int64_t d : shape) {
      if (d != 0 && n > UINT64_MAX / static_cast<std::uint64_t>(d))
        bad("an array shape of fewer than 2^64 bytes", "a larger shape");
      n *= static_cast<std::uint64_t>(d);
    }
    if (n != size)
      bad("an array of " + std::to_string(n) + " bytes (its shape)", std::to_string(size) + " bytes of data");
    return {std::move(shape), at(data).ref, true};
  }
  // BUILD on _reconstruct's array: (version, shape, dtype, is_fortran, raw bytes); on a dtype: its
  // byte order and flags, which a uint8 dtype does not need.
  void build_numpy(std::uint32_t target, std::uint32_t state) {
    if (is_global(target, Global::dtype)) {
      if (!is(state, Kind::tuple)) bad("a numpy dtype's state as a tuple", describe(g_, state));
      return;
    }
    if (!is(target, Kind::array) || g_.arrays[at(target).ref].built)
      bad("BUILD only on a new numpy array or dtype", describe(g_, target));
    const auto s = is(state, Kind::tuple) ? g_.items[at(state).ref] : std::vector<std::uint32_t>{};
    if (s.size() != 5) bad("an array's state (version, shape, dtype, fortran, data)", describe(g_, state));
    if (!is_global(s[2], Global::dtype)) bad("a numpy dtype in an array's state", describe(g_, s[2]));
    if (!(is(s[3], Kind::boolean) || is(s[3], Kind::integer)) || at(s[3]).i != 0)
      bad("an array in C order (is_fortran False)", describe(g_, s[3]));
    if (!is(s[4], Kind::bytes)) bad("an array's data as bytes (a uint8 array)", describe(g_, s[4]));
    g_.arrays[at(target).ref] = make_array(ints(s[1], "an array's shape"), s[4]);
  }

  std::int64_t integer(std::uint32_t v, const char* what) {
    if (!is(v, Kind::integer)) bad(std::string(what) + " as an int", describe(g_, v));
    return at(v).i;
  }
  std::vector<std::int64_t> ints(std::uint32_t v, const char* what) {
    if (!is(v, Kind::tuple)) bad(std::string(what) + " as a tuple of ints", describe(g_, v));
    const auto& items = g_.items[at(v).ref];
    if (items.size() > limits_.max_dims)
      bad(std::string(what) + " of at most " + std::to_string(limits_.max_dims) + " dimensions",
          std::to_string(items.size()));
    std::vector<std::int64_t> out;
    for (std::uint32_t i : items) {
      const std::int64_t x = integer(i, what);
      if (x < 0) bad(std::string(what) + " of non-negative ints", std::to_string(x));
      out.push_back(x);
    }
    return out;
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  // and _v3's same arguments with the dtype before metadata.
  std::uint32_t tensor(const std::vector<std::uint32_t>& a, Dtype dtype, std::uint32_t metadata) {
    if (!is(a[0], Kind::storage)) bad("a storage (a persistent id) as a tensor's first argument", describe(g_, a[0]));
    Tensor t;
    t.storage = at(a[0]).ref;
    t.dtype = dtype;
    const std::int64_t offset = integer(a[1], "a storage offset");
    if (offset < 0) bad("a non-negative storage offset", std::to_string(offset));
    t.offset = static_cast<std::uint64_t>(offset);
    t.shape = ints(a[2], "a size");
    t.strides = ints(a[3], "a stride");
    if (t.shape.size() != t.strides.size())
      bad("as many strides as dimensions",
          std::to_string(t.strides.size()) + " strides for " + std::to_string(t.shape.size()) + " dimensions");
    if (!is(a[4], Kind::boolean)) bad("requires_grad as a bool", describe(g_, a[4]));
    if (!is(a[5], Kind::dict)) bad("backward hooks as a dict", describe(g_, a[5]));
    // Metadata sets bits that change what the bytes mean (a conjugate or negative view); none is
    // what a state dict of real tensors holds.
    if (metadata != kNone && !(is(metadata, Kind::dict) && g_.items[at(metadata).ref].empty()))
      fail(ErrorKind::unsupported, where_, "tensors without metadata (a state dict's)",
           "a tensor with metadata such as a conjugate bit (" + describe(g_, metadata) + ")",
           "save t.resolve_conj().resolve_neg() instead of the view");
    g_.tensors.push_back(std::move(t));
    return add({Kind::tensor, 0, static_cast<std::uint32_t>(g_.tensors.size() - 1), 0});
  }

  // ("storage", storage class, key, location, numel): torch.save's persistent id of a storage.
  std::uint32_t persistent(std::uint32_t pid) {
    if (!is(pid, Kind::tuple)) bad("a persistent id tuple", describe(g_, pid));
    const auto a = g_.items[at(pid).ref];
    if (a.size() != 5 || !is(a[0], Kind::string) || g_.str(a[0]) != "storage")
      bad("a persistent id ('storage', class, key, location, numel)", describe(g_, pid));
    if (!is_global(a[1], Global::storage_class)) bad("a torch storage class", describe(g_, a[1]));
    if (!is(a[2], Kind::string) || !is(a[3], Kind::string))
      bad("a storage key and location as strings", describe(g_, pid));
    const std::string& key = g_.str(a[2]);
    if (key.empty() || key.size() > 64 || key.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
      bad("a storage key naming a record in data/", "'" + printable_name(key) + "'");
    const std::int64_t numel = integer(a[4], "a storage's element count");
    if (numel < 0) bad("a non-negative storage size", std::to_string(numel));
    const Dtype dtype = static_cast<Dtype>(at(a[1]).i);
    auto [it, added] = storage_of_key_.try_emplace(key, static_cast<std::uint32_t>(g_.storages.size()));
    if (added) {
      g_.storages.push_back({key, g_.str(a[3]), dtype, static_cast<std::uint64_t>(numel)});
    } else {
      const Storage& s = g_.storages[it->second];
      if (s.dtype != dtype || s.numel != static_cast<std::uint64_t>(numel))
        bad("one dtype and size per storage", "storage '" + printable_name(key) + "' named twice with different ones");
    }
    return add({Kind::storage, 0, it->second, 0});
  }

  // One opcode; each family's step_*() returns whether the opcode was of its family.
  void step(std::uint8_t op);
  bool step_stack(std::uint8_t op);
  bool step_number(std::uint8_t op);
  bool step_string(std::uint8_t op);
  bool step_tuple_or_list(std::uint8_t op);
  bool step_dict_or_set(std::uint8_t op);
  bool step_object(std::uint8_t op);
  bool step_memo(std::uint8_t op);
  [[noreturn]] void refuse(std::uint8_t op);

  std::span<const std::uint8_t> bytes_;
  std::string where_;
  Limits limits_;
  std::size_t pos_ = 0, op_at_ = 0;
  std::uint64_t pushes_ = 0;
  Graph g_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, std::uint32_t> memo_;
  std::unordered_map<std::string, std::uint32_t> storage_of_key_;
};

// PROTO, FRAME and the stack and its marks.
bool Machine::step_stack(std::uint8_t op) {
  switch (op) {
    case 0x80: {  // PROTO
      const int proto = u8();
      if (proto < 2 || proto > 5)
        bad("pickle protocol 2 to 5 (torch.save writes 2)", "protocol " + std::to_string(proto));
      return true;
    }
    case 0x95:
      le(8);
      return true;  // FRAME: a length hint for buffered readers
    case '(':
      marks_.push_back(stack_.size());
      return true;
    case '0':  // POP: Python pops the mark when nothing is above it
      if (stack_.size() > floor())
        stack_.pop_back();
      else
        pop_mark();
      return true;
    case '1':
      pop_mark();
      return true;  // POP_MARK
    case '2':
      push(top());
      return true;  // DUP
    default:
      return false;
  }
}

// None, booleans, integers and floats.
bool Machine::step_number(std::uint8_t op) {
  switch (op) {
    case 'N':
      push(kNone);
      return true;
    case 0x88:
      push(kTrue);
      return true;
    case 0x89:
      push(kFalse);
      return true;
    case 'J':
      push(add_int(static_cast<std::int32_t>(le(4))));
      return true;  // BININT
    case 'K':
      push(add_int(u8()));
      return true;  // BININT1
    case 'M':
      push(add_int(static_cast<std::int64_t>(le(2))));
      return true;  // BININT2
    case 0x8a:
    case 0x8b: {  // LONG1, LONG4: little-endian two's complement of n bytes
      const std::uint64_t n = op == 0x8a ? u8() : le(4);
      if (n > 0x7fffffff) bad("a LONG4 length", std::to_string(n));
      const std::uint8_t* p = take(n);
      if (n > 8) {
        push(add({Kind::big_integer}));
        return true;
      }
      std::uint64_t v = 0;
      for (std::uint64_t k = n; k-- > 0;) v = (v << 8) | p[k];
      if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
      push(add_int(static_cast<std::int64_t>(v)));
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian
      const std::uint8_t* p = take(8);
      std::uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[k];
      push(add({Kind::floating, 0, 0, static_cast<std::int64_t>(bits)}));
      return true;
    }
    default:
      return false;
  }
}

// Strings and bytes of every length encoding.
bool Machine::step_string(std::uint8_t op) {
  switch (op) {
    case 'X':
    case 'T':
    case 'B': {
      const std::uint64_t n = le(4);
      push(add_string(op == 'B' || (op == 'T' && numpy()) ? Kind::bytes : Kind::string, take(n), n));
      return true;
    }
    case 0x8c:
    case 'U':
    case 'C': {  // SHORT_BINUNICODE, SHORT_BINSTRING (Python 2's str), SHORT_BINBYTES
      const std::uint64_t n = u8();
      push(add_string(op == 'C' || (op == 'U' && numpy()) ? Kind::bytes : Kind::string, take(n), n));
      return true;
    }
    case 0x8d:
    case 0x8e:
    case 0x96: {
      const std::uint64_t n = le(8);
      push(add_string(op == 0x8d ? Kind::string : Kind::bytes, take(n), n));
      return true;
    }
    default:
      return false;
  }
}

// Tuples and lists, built or appended to.
bool Machine::step_tuple_or_list(std::uint8_t op) {
  switch (op) {
    case ')':
      push(add_container(Kind::tuple));
      return true;
    case 't':
      push(add_container(Kind::tuple, pop_mark()));
      return true;
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      std::vector<std::uint32_t> items(op - 0x84);
      for (std::size_t k = items.size(); k-- > 0;) items[k] = pop();
      push(add_container(Kind::tuple, std::move(items)));
      return true;
    }
    case ']':
      push(add_container(Kind::list));
      return true;
    case 'l':
      push(add_container(Kind::list, pop_mark()));
      return true;
    case 'a': {
      const std::uint32_t v = pop();
      container(top(), Kind::list, "APPEND").push_back(v);
      return true;
    }
    case 'e': {
      auto items = pop_mark();
      auto& list = container(top(), Kind::list, "APPENDS");
      list.insert(list.end(), items.begin(), items.end());
      return true;
    }
    default:
      return false;
  }
}

// Dicts and sets, built or added to.
bool Machine::step_dict_or_set(std::uint8_t op) {
  switch (op) {
    case '}':
      push(add_container(Kind::dict));
      return true;
    case 'd': {
      auto items = pop_mark();
      if (items.size() % 2) bad("keys and values in pairs", std::to_string(items.size()) + " items");
      push(add_container(Kind::dict, std::move(items)));
      return true;
    }
    case 's': {
      const std::uint32_t v = pop(), k = pop();
      auto& d = container(top(), Kind::dict, "SETITEM");
      d.push_back(k);
      d.push_back(v);
      return true;
    }
    case 'u': {
      auto items = pop_mark();
      if (items.size() % 2) bad("keys and values in pairs", std::to_string(items.size()) + " items");
      auto& d = container(top(), Kind::dict, "SETITEMS");
      d.insert(d.end(), items.begin(), items.end());
      return true;
    }
    case 0x8f:
      push(add_container(Kind::set));
      return true;  // EMPTY_SET
    case 0x90: {    // ADDITEMS
      auto items = pop_mark();
      auto& s = container(top(), Kind::set, "ADDITEMS");
      s.insert(s.end(), items.begin(), items.end());
      return true;
    }
    case 0x91:
      push(add_container(Kind::set, pop_mark()));
      return true;  // FROZENSET
    default:
      return false;
  }
}

// Globals, calls and persistent ids: only what a state dict holds (the rest is refused there).
bool Machine::step_object(std::uint8_t op) {
  switch (op) {
    case 'c': {
      std::string module = line();
      std::string name = line();
      push(global(module, name));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const std::uint32_t name = pop(), module = pop();
      if (!is(name, Kind::string) || !is(module, Kind::string))
        bad("a module and a name as strings", describe(g_, name));
      push(global(g_.str(module), g_.str(name)));
      return true;
    }
    case 'R': {
      const std::uint32_t args = pop(), callable = pop();
      push(call(callable, args, "REDUCE"));
      return true;
    }
    case 0x81:
    case 0x92: {              // NEWOBJ, NEWOBJ_EX: cls.__new__(cls, *args): an empty OrderedDict only
      if (op == 0x92) pop();  // kwargs
      const std::uint32_t args = pop(), cls = pop();
      if (!is_global(cls, Global::ordered_dict)) bad("NEWOBJ only of OrderedDict", describe(g_, cls));
      push(call(cls, args, "NEWOBJ"));
      return true;
    }
    case 'b': {  // BUILD: an OrderedDict's attributes (a state dict's _metadata) are not needed
      const std::uint32_t state = pop();
      if (numpy()) {
        build_numpy(top(), state);
        return true;
      }
      if (!is(top(), Kind::dict)) bad("BUILD only on an OrderedDict", describe(g_, top()));
      (void)state;
      return true;
    }
    case 'Q': {
      const std::uint32_t pid = pop();
      push(persistent(pid));
      return true;
    }  // BINPERSID
    default:
      return false;
  }
}

// The memo: PUT, MEMOIZE and GET.
bool Machine::step_memo(std::uint8_t op) {
  switch (op) {
    case 'q':
      put(u8());
      return true;
    case 'r':
      put(le(4));
      return true;
    case 0x94:
      put(memo_.size());
      return true;  // MEMOIZE
    case 'h':
      get(u8());
      return true;
    case 'j':
      get(le(4));
      return true;
    default:
      return false;
  }
}

// What step() met in no family: refused, naming the opcode.
void Machine::refuse(std::uint8_t op) {
  switch (op) {
    case 'i':
    case 'o':
      bad("only what a state dict holds",
          std::string("the opcode ") + (op == 'i' ? "INST" : "OBJ") + ", which creates an object",
          "refusing it: it could run code; only state dicts are read, and nothing was run");
    case 'P':
    case 0x82:
    case 0x83:
    case 0x84:
    case 0x97:
    case 0x98:
      bad("only what a state dict holds", "an opcode torch.save does not write (PERSID, EXT or an out-of-band buffer)",
          "refusing it; only state dicts are read, and nothing was run");
    case 'I':
    case 'L':
    case 'F':
    case 'S':
    case 'V':
    case 'p':
    case 'g':
      bad("a binary pickle (protocol 2, as torch.save writes by default)", "an opcode of text protocol 0",
          "save it again from Python with torch.save's default pickle_protocol");
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      bad("a pickle opcode", std::string("the byte ") + hex);
    }
  }
}

void Machine::step(std::uint8_t op) {
  if (step_stack(op) || step_number(op) || step_string(op) || step_tuple_or_list(op) || step_dict_or_set(op) ||
      step_object(op) || step_memo(op))
    return;
  refuse(op);
}

}  // namespace

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f64:
      return "F64";
    case Dtype::f32:
      return "F32";
    case Dtype::f16:
      return "F16";
    case Dtype::bf16:
      return "BF16";
    case Dtype::i64:
      return "I64";
    case Dtype::i32:
      return "I32";
    case Dtype::i16:
      return "I16";
    case Dtype::i8:
      return "I8";
    case Dtype::u8:
      return "U8";
    case Dtype::boolean:
      return "BOOL";
  }
  return "?";
}

std::size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::f64:
    case Dtype::i64:
      return 8;
    case Dtype::f32:
    case Dtype::i32:
      return 4;
    case Dtype::f16:
    case Dtype::bf16:
    case Dtype::i16:
      return 2;
    case Dtype::i8:
    case Dtype::u8:
    case Dtype::boolean:
      return 1;
  }
  return 1;
}

std::string describe(const Graph& g, std::uint32_t v) {
  const Value& x = g.values[v];
  auto count = [&](const char* what) {
    return std::string("a ") + what + " of " + std::to_string(g.items[x.ref].size()) + " items";
  };
  switch (x.kind) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return x.i ? "True" : "False";
    case Kind::integer:
      return "the int " + std::to_string(x.i);
    case Kind::big_integer:
      return "an int of more than 64 bits";
    case Kind::floating:
      return "the float " + std::to_string(std::bit_cast<double>(x.i));
    case Kind::string: {
      const std::string& s = g.strings[x.ref];
      return "the string '" + (s.size() > 60 ? s.substr(0, 60) + "..." : s) + "'";
    }
    case Kind::bytes:
      return "bytes";
    case Kind::tuple:
      return count("tuple");
    case Kind::list:
      return count("list");
    case Kind::dict:
      return "a dict of " + std::to_string(g.items[x.ref].size() / 2) + " items";
    case Kind::set:
      return count("set");
    case Kind::global:
      return x.sub >= static_cast<std::uint8_t>(Global::np_reconstruct) ? "a global of numpy's" : "a global of torch's";
    case Kind::storage:
      return "a storage";
    case Kind::tensor:
      return "a tensor";
    case Kind::array:
      return "a numpy array";
  }
  return "a value";
}

Graph unpickle(std::span<const std::uint8_t> bytes, const std::string& where, const Limits& limits) {
  try {
    return Machine(bytes, where, limits).run();
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::invalid, limits.profile == Profile::numpy_arrays ? where : where + ": data.pkl",
         "a pickle that fits in memory", "one that does not", "the file is crafted or not a state dict");
  }
}

}  // namespace frugal::pickle
