// State dicts written by PyTorch's torch.save, read without LibTorch and without running pickle code
// (src/weights/, library frugal_weights). A torch.save file is a zip ("NAME/data.pkl", one record
// "NAME/data/<key>" per storage, "NAME/byteorder", "NAME/version"; NAME varies) whose data.pkl is a
// pickle that rebuilds tensors from those storages. Python's pickle may call any function it names;
// frugal's own unpickler knows the few a state dict needs (collections.OrderedDict, torch._utils's
// _rebuild_tensor_v2/_v3 and _rebuild_parameter, the torch.*Storage classes and dtypes) and refuses
// every other global before anything could be called. LibTorch's torch::pickle_load is no help here:
// it fails on an OrderedDict (pytorch/pytorch#100741).
//
// What comes out is a description of each tensor (dtype, shape, strides, storage and where in it);
// the bytes are read from the zip on demand. Turning them into torch::Tensors is checkpoint's job.
// Formats and what is refused: docs/formats.md, "torch.save files".
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frugal/util/fs.h"

namespace frugal {

class Archive;

// One tensor of the state dict, as torch.load would rebuild it.
struct SavedTensor {
  std::string name;                   // after unwrapping (TorchSaveFile::prefix_removed())
  std::string dtype;                  // safetensors' name: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL
  std::size_t item_size = 0;          // bytes per element of dtype
  std::vector<std::int64_t> shape;    // each >= 0
  std::vector<std::int64_t> strides;  // in elements, each >= 0, one per dimension
  std::uint64_t storage_offset = 0;   // in elements of dtype
  std::string storage_key;            // the record NAME/data/<storage_key>
  std::uint64_t storage_bytes = 0;    // that record's size
  // The bytes of the record the elements lie in, [byte_begin, byte_end) (empty for no elements);
  // checked to lie inside the record, without wrapping.
  std::uint64_t byte_begin = 0, byte_end = 0;

  std::uint64_t numel() const;
  // C-order strides over the whole range: the bytes are the tensor, no gather needed.
  bool contiguous() const;
};

// A torch.save file opened: its tensors known, its storages read on demand (the file stays mapped).
class TorchSaveFile {
 public:
  // Throws Error naming the file: invalid for anything but a regular file (fs.h's open_regular; a
  // FIFO is never waited on), for corrupt or crafted bytes, for a global that is not a state dict's
  // ("refusing to load os.system: it could run code"); unsupported for the legacy (pre-1.6,
  // non-zip) format, with the one line of Python that converts it, for a TorchScript module, a
  // big-endian file or a dtype frugal does not read.
  static TorchSaveFile open(const std::filesystem::path& path, Links links = Links::follow);
  // The same over bytes in memory, `name` in messages (tests, the fuzz target).
  static TorchSaveFile from_bytes(std::string bytes, const std::string& name);

  TorchSaveFile(TorchSaveFile&&) noexcept;
  TorchSaveFile& operator=(TorchSaveFile&&) noexcept;
  ~TorchSaveFile();

  // In the order of the pickle (a state dict's own order). Two tensors may share a storage (tied
  // weights, views).
  const std::vector<SavedTensor>& tensors() const { return tensors_; }
  // Where the state dict was found: "" when it is the whole file, else the keys followed, joined by
  // "." ("model", "state_dict", "model.module").
  const std::string& found_under() const { return found_under_; }
  // The prefix every name carried and was removed ("module." of DistributedDataParallel,
  // "_orig_mod." of torch.compile, or both), or "".
  const std::string& prefix_removed() const { return prefix_removed_; }
  const std::string& display_name() const { return display_name_; }

  // The whole storage record `key` (as SavedTensor::storage_key names it) into `out`, whose size
  // must be its storage_bytes. CRC-32 checked (but for a record torch saved with CRC off, whose
  // CRC field is 0). Thread-safe.
  void read_storage(const std::string& key, std::span<std::uint8_t> out) const;
  std::vector<std::uint8_t> storage(const std::string& key) const;
  // The tensor's elements in C order (contiguous, as safetensors holds them): its byte range read,
  // gathered by its strides when it is a strided view.
  std::vector<std::uint8_t> tensor_bytes(const SavedTensor& tensor) const;

 private:
  TorchSaveFile() = default;
  void init();
  std::size_t storage_entry(const std::string& key) const;

  std::unique_ptr<Archive> archive_;
  std::string display_name_;
  std::string prefix_;  // the zip's top folder, "NAME/"
  std::vector<SavedTensor> tensors_;
  std::string found_under_, prefix_removed_;
};

// What the first bytes of a file say it is, when it is one of PyTorch's formats: "zip" (torch.save
// since 1.6, or TorchScript), "legacy" (torch.save's older pickle format: not read), or "" for
// anything else. `head` holds at least the file's first 16 bytes where it has them.
std::string torch_file_kind(std::span<const std::uint8_t> head);

}  // namespace frugal
