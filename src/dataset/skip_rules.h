// Which archive entries are not samples, and why: the one rule that training (layout.cpp) and
// predict (predict_inputs.cpp) count skipped files by, so both say "3 junk, 1 not an image" alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "frugal/archive/archive.h"
#include "frugal/image/image.h"

namespace frugal::detail {

// The reason a file named by `parts` (its path split at '/') is junk and never a sample
// ("junk (__MACOSX)", "hidden", "left by an interrupted write ..."), or "" when it may be one.
std::string junk_reason(const std::vector<std::string>& parts);

// Why entry e is listed but never read (docs/data.md), or "" when it may be read: an unsafe name
// (is_unsafe_name(), as stored or as shown: kUnsafeNameSkip), a symbolic or hard link (a folder's
// named by where it leads: out of the data, a cycle, nowhere), a device or FIFO, a sparse file,
// or a member of a kind frugal does not know. Training and predict skip and
// count such entries before reading a byte of them; read, they would fail as undecodable images.
std::string never_read_reason(const ZipEntry& e);

// The format of entry i: by magic bytes when it is stored (a mapped view costs nothing), else by
// the extension of `base` (its file name), checked again when decoding; a name whose extension
// says nothing (none, or one of no known kind: not .txt, .csv, .json, ...) by its first 32 bytes,
// read here, so an extensionless JPEG is an image in training as in predict. Only such names are
// opened: files named as images (the common case) cost nothing more.
ImageFormat entry_format(const Archive& a, std::size_t i, const std::string& base);

// Why a file cannot be a sample by its size and format ("empty file", "not an image",
// "unsupported format (HEIC)"), or "" when it may be one. A format frugal recognises but does not
// read is named, so a phone's photos are not lumped with stray text files.
std::string format_skip_reason(const ZipEntry& e, ImageFormat f);

}  // namespace frugal::detail
