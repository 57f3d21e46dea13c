// libFuzzer target for torch.save files: input starting "PK" is a whole file (zip, byte order,
// records, then the pickle); anything else is a data.pkl alone. Every tensor read must lie inside its
// storage with no more bytes than it, and a zip's tensors must read back as numel x item bytes.
// Seeds (fuzz/corpus/torch_save/): files torch.save wrote (tests/weights/make_torch_save.py) and
// their data.pkl, a pickled module and a live os.system payload.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frugal/util/error.h"
#include "frugal/weights/torch_save.h"
#include "weights/state_dict.h"

namespace {

void check(const frugal::SavedTensor& t) {
  if (t.byte_end > t.storage_bytes || t.byte_begin > t.byte_end) __builtin_trap();
  if (t.numel() * t.item_size > t.storage_bytes) __builtin_trap();
  if (t.shape.size() != t.strides.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
      const auto f =
          frugal::TorchSaveFile::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pth");
      for (const auto& t : f.tensors()) {
        check(t);
        if (f.tensor_bytes(t).size() != t.numel() * t.item_size) __builtin_trap();
      }
    } else {
      const auto sd = frugal::read_state_dict_pickle({data, size}, "fuzz.pth");
      for (const auto& t : sd.tensors) check(t);
    }
  } catch (const frugal::Error&) {}
  return 0;
}
