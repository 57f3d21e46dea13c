// libFuzzer target for CIFAR's readers (src/archive/cifar.h): the pickled batches and meta files
// through the data-only unpickler's numpy profile, and the record files. Any input either gives a
// batch whose rows, labels and bytes agree, or fails with frugal::Error; never a crash, a call of a
// global, or an allocation the input's size does not bound.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "archive/cifar.h"
#include "frugal/util/error.h"

namespace {

// The checks every reader promises of a batch it returns.
void check(const frugal::cifar::Batch& b, bool cifar100) {
  if (b.stride < frugal::cifar::kPixels + b.offset || b.data.size() != b.rows * b.stride) __builtin_trap();
  if (b.fine.size() != b.rows || (cifar100 && b.coarse.size() != b.rows)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A pickle (its PROTO opcode first, 0x80) is read as a batch; any other first byte picks a record
  // file or the class names, so one corpus reaches every reader.
  if (size == 0) return 0;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  try {
    if (data[0] == 0x80) {
      const bool cifar100 = size & 1;
      check(frugal::cifar::parse_pickle_batch({data, size}, "data_batch_1", cifar100), cifar100);
    } else if (data[0] % 3 < 2) {
      const bool cifar100 = data[0] % 3 == 1;
      check(frugal::cifar::parse_record_file(std::string(rest.begin(), rest.end()), "data_batch_1.bin", cifar100),
            cifar100);
    } else {
      (void)frugal::cifar::parse_pickle_names(rest, "batches.meta", "label_names");
      (void)frugal::cifar::parse_name_lines({reinterpret_cast<const char*>(rest.data()), rest.size()});
    }
  } catch (const frugal::Error&) {}
  return 0;
}
