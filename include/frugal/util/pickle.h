// A pickle machine that only builds data: the opcodes of protocols 2 to 5 that make values (numbers,
// strings, tuples, lists, dicts, sets), memo and marks, and the handful of globals one kind of file
// names (Profile): a torch.save state dict's, or a numpy uint8 array's (CIFAR's batches). A global outside that list is refused when the GLOBAL opcode names it, so nothing is
// ever looked up, let alone called; REDUCE, BUILD and NEWOBJ act only on the known globals, each by a
// rule written here (a tensor is described, never built). INST, OBJ, PERSID, EXT and out-of-band
// buffers are refused.
//
// Values live in one arena and refer to each other by index: a pickle may share and even cycle its
// values (memo), which costs nothing here and cannot recurse or leak. Each opcode adds at most one
// value, so memory is bounded by the pickle's length and Limits::max_values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace frugal::pickle {

// A tensor's element type as torch names it, with safetensors' spelling.
enum class Dtype : std::uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };
const char* dtype_name(Dtype d);  // "F32", ...
std::size_t dtype_size(Dtype d);

enum class Kind : std::uint8_t {
  none,
  boolean,
  integer,
  big_integer,
  floating,
  string,
  bytes,
  tuple,
  list,
  dict,
  set,      // containers: items in Graph::items[ref] (a dict: key, value, key, value, ...)
  global,   // one of Global, in `sub`; a storage class or dtype carries its Dtype in `i`
  storage,  // Graph::storages[ref], from a persistent id
  tensor,   // Graph::tensors[ref], from a _rebuild_tensor_* call
  array,    // Graph::arrays[ref], from numpy's _reconstruct (+ BUILD) or _frombuffer
};

enum class Global : std::uint8_t {
  ordered_dict,
  rebuild_tensor_v2,
  rebuild_tensor_v3,
  rebuild_parameter,
  rebuild_parameter_with_state,
  storage_class,  // torch.FloatStorage, ..., torch.UntypedStorage (bytes: Dtype::u8)
  dtype,          // torch.float32, ... (what _rebuild_tensor_v3 is given); a numpy dtype('u1') made by REDUCE
  // Profile::numpy_arrays only:
  np_reconstruct,  // numpy.core.multiarray._reconstruct (numpy 2: numpy._core.multiarray)
  np_ndarray,      // numpy.ndarray, _reconstruct's first argument
  np_dtype,        // numpy.dtype, called with ('u1', ...)
  np_frombuffer,   // numpy.core.numeric._frombuffer (numpy 2: numpy._core): protocol 5's in-band array
  codecs_encode,   // _codecs.encode(text, 'latin1'): how Python 3 writes bytes at protocol 2
};

// Which globals a pickle may name: each kind of file its own short list, every other global refused.
enum class Profile : std::uint8_t {
  torch_state_dict,  // torch.save's data.pkl
  // numpy.ndarray of uint8 (C order) as pickled by Python 2's cPickle or Python 3 (protocol 2 to 5,
  // numpy 1 or 2); Python 2 str (SHORT_BINSTRING, BINSTRING) reads as bytes, as Python 3's
  // pickle.load(f, encoding='bytes') reads it.
  numpy_arrays,
};

struct Value {
  Kind kind = Kind::none;
  std::uint8_t sub = 0;   // Global for Kind::global
  std::uint32_t ref = 0;  // index into Graph::strings, items, storages or tensors
  std::int64_t i = 0;     // integer and boolean; floating: the double's bits; global: its Dtype
};

// A storage as a persistent id names it: ("storage", storage class, key, location, numel).
struct Storage {
  std::string key, location;
  Dtype dtype = Dtype::u8;
  std::uint64_t numel = 0;  // elements of dtype (bytes for UntypedStorage)
};

struct Tensor {
  std::uint32_t storage = 0;  // index into Graph::storages
  Dtype dtype = Dtype::f32;
  std::uint64_t offset = 0;  // elements
  std::vector<std::int64_t> shape, strides;
};

// A numpy array of uint8 in C order: `shape`, and its bytes in Graph::strings[data].
struct Array {
  std::vector<std::int64_t> shape;
  std::uint32_t data = 0;
  bool built = false;  // _reconstruct makes it empty; BUILD gives it its shape and bytes
};

struct Graph {
  std::vector<Value> values;
  std::vector<std::string> strings;
  std::vector<std::vector<std::uint32_t>> items;
  std::vector<Storage> storages;
  std::vector<Tensor> tensors;
  std::vector<Array> arrays;
  std::uint32_t root = 0;  // the value STOP returned

  const Value& at(std::uint32_t v) const { return values[v]; }
  const std::string& str(std::uint32_t v) const { return strings[values[v].ref]; }
  const std::vector<std::uint32_t>& children(std::uint32_t v) const { return items[values[v].ref]; }
};

struct Limits {
  std::uint64_t max_values = 1u << 22;  // 64 MiB of arena; a state dict takes ~25 per tensor
  std::size_t max_dims = 32;
  Profile profile = Profile::torch_state_dict;
};

// Runs `bytes` (a whole pickle, ending in STOP). Throws Error(invalid) naming `where` (torch: its
// data.pkl) and the byte
// offset for bad or crafted bytes and for every global outside the list (its name, and that nothing
// was run); Error(unsupported) for globals frugal knows but does not read (complex, quantized or
// float8 storages, tensor metadata such as a conjugate bit).
Graph unpickle(std::span<const std::uint8_t> bytes, const std::string& where, const Limits& limits = {});

// A short description of a value for messages ("a dict of 3 items", "the int 3", "'conv1.weight'").
std::string describe(const Graph& g, std::uint32_t v);

}  // namespace frugal::pickle
