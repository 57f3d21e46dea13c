// What frugal prints for people: names that come from data made safe for a terminal, whether
// stderr redraws a line in place, and JSON that stays valid whatever bytes a name holds.
//
// Names come from archives, folders, CSV files and checkpoints that a user did not write. Printed
// raw, an entry named "ESC[2K\r... OK" erases and forges lines on the user's screen (terminal
// injection); so every human output of a name goes through printable(), as `ls -b` and git do.
// --json output needs no escaping (JSON escapes control characters) but must not fail on bytes
// that are not UTF-8: json_text() replaces them.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace frugal {

// `s` with every byte that a terminal would act on written as an escape: control characters
// (C0, DEL, and C1 as UTF-8 U+0080..U+009F) as \t, \n, \r or \xHH; bytes that are not valid UTF-8
// as \xHH; Unicode's direction overrides and isolates (U+202A..U+202E, U+2066..U+2069) as \u202e
// (they reorder what is shown). Everything else, other scripts included, is kept as it is.
std::string printable(std::string_view s);

// Whether `s` would print unchanged through printable().
bool is_printable(std::string_view s);

// `s` as valid UTF-8 for a JSON record: unchanged when it is, otherwise each byte that is not part
// of a valid sequence written as \xHH (a Latin-1 path "d\xe9.zip"). Unlike json_text()'s U+FFFD,
// two paths that differ stay different, so a record of them can still be compared.
std::string utf8_escaped(std::string_view s);

// How progress is shown on stderr: a bar redrawn in place ("\r...\x1b[K") on a real terminal;
// plain lines everywhere else: a pipe or file, TERM=dumb, and a notebook's `!command` (Jupyter,
// Colab and Kaggle run it under a pseudo-terminal that keeps every "\r" redraw as a new line of
// the cell). FRUGAL_PROGRESS=plain or =bar overrides the choice.
bool stderr_redraws();

// One JSON document as text; bytes in strings that are not UTF-8 (a Latin-1 path on disk) are
// replaced by U+FFFD instead of throwing. indent < 0: one line.
std::string json_text(const nlohmann::json& doc, int indent = -1);

}  // namespace frugal
