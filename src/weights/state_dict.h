// The state dict inside a torch.save pickle: found (whole, or under "state_dict", "model_state_dict",
// "model" or "module" of a training checkpoint), its names unwrapped of DistributedDataParallel's
// "module." and torch.compile's "_orig_mod.", each tensor described and held inside its storage.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frugal/weights/torch_save.h"
#include "frugal/util/pickle.h"

namespace frugal {

struct StateDict {
  std::vector<SavedTensor> tensors;  // storage_bytes from the persistent id (numel x its dtype)
  std::string found_under, prefix_removed;
};

// Throws Error(invalid) naming `where` when the pickle holds no state dict (saying what it holds),
// or a tensor reaches past its storage (computed without wrapping).
StateDict state_dict_of(const pickle::Graph& g, const std::string& where);

// unpickle() then state_dict_of(): all of a torch.save file that is not the zip.
StateDict read_state_dict_pickle(std::span<const std::uint8_t> pickle, const std::string& where);

}  // namespace frugal
