// Guessing the encoding of entry names that are not UTF-8 (zip stores bytes; old Windows and
// Mac tools write them in the machine's code page), to suggest --name-encoding to the user. The
// decoding itself is the archive's (ArchiveOptions::name_encoding); a guess is never applied.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace frugal {

// The legacy encodings of gbk, shift_jis, big5, euc-kr, cp1252, cp437 and cp866 that decode every
// name of `raw_names` (bytes as stored) and read most like text: letters of one script, few
// symbols, box drawing or half-width forms. Best first; encodings that score alike are all kept,
// in that order (without a frequency table GB2312 text also reads as Big5 or EUC-KR). Empty when
// none decodes them all. Looks at the first 256 names.
std::vector<std::string> guess_name_encodings(const std::vector<std::string>& raw_names);

// Names that are listed but never read (docs/data.md): absolute ("/x", "\x", a drive letter as
// in "C:x"), with a ".." part (parts split at '/' and '\'), or holding a NUL byte. `ls` and
// `verify` name them (entry_problem()), `extract` refuses them; training, predict and the
// WebDataset grouping skip them, counted under kUnsafeNameSkip, so that "/tmp/x.jpg" is not a
// sample of a class "tmp".
bool is_unsafe_name(std::string_view name);
inline constexpr const char* kUnsafeNameSkip = "unsafe name (absolute, with '..' or a NUL byte; never read)";

}  // namespace frugal
