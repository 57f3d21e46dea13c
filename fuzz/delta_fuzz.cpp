// libFuzzer target for a delta checkpoint's metadata. Input: "base" NEWLINE "delta_index" (without
// a newline, the whole input is tried as both). Each either fails with frugal::Error or gives byte
// counts that are the exact dtype x shape product and a base path directly inside the delta's
// folder.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "frugal/util/error.h"
#include "frugal/checkpoint_files/run_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = text.find('\n');
  const std::string_view base_text = text.substr(0, newline);
  const std::string_view index_text = newline == std::string_view::npos ? text : text.substr(newline + 1);
  try {
    for (const auto& item : frugal::parse_delta_index(index_text, "fuzz.delta.safetensors")) {
      unsigned __int128 bytes = frugal::safetensors_dtype_size(item.dtype);
      for (auto d : item.shape) {
        if (d < 0) __builtin_trap();
        bytes *= static_cast<std::uint64_t>(d);
      }
      if (bytes != item.bytes) __builtin_trap();
      if (item.mode != "same" && item.mode != "xor" && item.mode != "raw") __builtin_trap();
    }
  } catch (const frugal::Error&) {}
  // A folder that does not exist: confine_path() finds nothing to lstat and writes nothing.
  const std::filesystem::path run = "/nonexistent-frugal-fuzz/run";
  try {
    const auto base = frugal::delta_base_path(run / "ckpt-e0001-s000020.delta.safetensors", base_text);
    if (base.parent_path() != run || base.filename() == "ckpt-e0001-s000020.delta.safetensors" ||
        base.filename() == ".." || base.filename() == ".")
      __builtin_trap();
  } catch (const frugal::Error&) {}
  return 0;
}
