// One answer for every path a user names as input (issue 17): a missing file, a folder where a file
// belongs, a manifest beside the name, a typo. Every command and the library call this before
// opening, so `ls`, `train --data`, `predict` and the rest say the same thing with the same exit code.
//
// The rule (CLI.md): a path that does not name a readable input of the right kind is a usage error
// (exit 2), like a bad option value; the user fixes the command line. Input that exists but is
// damaged is ErrorKind::invalid (exit 3), found later by whoever parses it.
#pragma once

#include <filesystem>
#include <string>

namespace frugal {

enum class InputKind {
  archive,      // a zip, a split manifest, or the first part of a set (CLI.md, "ARCHIVE")
  file,         // any readable file (split FILE, an image)
  manifest,     // a FILE.manifest.json written by `frugal split`
  checkpoint,   // a checkpoint file or a run folder (CLI.md, "CKPT")
  folder,       // a folder (a workspace for du and clean)
  pack_source,  // a folder of class sub-folders, or an IDX file
};

// What `kind` is called in messages: "an archive (a .zip, a split manifest or the first part of a set)".
std::string input_kind_name(InputKind kind);

// Returns the path to read: `path` itself, or for an archive that is missing while
// NAME.manifest.json lies beside it, that manifest (the set is read through it).
// Otherwise throws Error(usage) as "<path>: expected <kind>, found <what is there>; <what to do>",
// naming a near name in the same folder when the path looks like a typo of one.
std::filesystem::path check_input(const std::filesystem::path& path, InputKind kind);

// The entry of path's folder whose name is nearest to path's (a typo or a case slip), or empty when
// none is near. Bounded: folders of more than a few thousand entries are not searched.
std::filesystem::path near_name(const std::filesystem::path& path);

}  // namespace frugal
