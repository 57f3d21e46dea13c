// --amp's values and the choice `auto` makes, torch-free (training/train_config.h).
#include <string>

#include "frugal/training/train_config.h"
#include "frugal/util/error.h"

namespace frugal {

const char* to_string(AmpMode mode) {
  switch (mode) {
    case AmpMode::fp16:
      return "fp16";
    case AmpMode::bf16:
      return "bf16";
    default:
      return "off";
  }
}

AmpMode parse_amp(const std::string& text) {
  if (text == "off") return AmpMode::off;
  if (text == "fp16") return AmpMode::fp16;
  if (text == "bf16") return AmpMode::bf16;
  fail(ErrorKind::usage, "{amp}", "auto, fp16, bf16 or off", "'" + text + "'", "");
}

AmpMode choose_amp(const std::string& device_kind, int major, int minor) {
  if (device_kind != "cuda") return AmpMode::off;
  if (major >= 8) return AmpMode::bf16;
  // fp16 tensor cores arrive with sm_70; sm_60 (P100) still runs fp16 at twice the fp32 rate, but
  // consumer Pascal (sm_61/62: GTX 10x0, Jetson TX2) at 1/64 of it.
  if (major >= 7 || (major == 6 && minor == 0)) return AmpMode::fp16;
  return AmpMode::off;
}

}  // namespace frugal
