// How messages name a user's setting. Library code names it by its key in braces, "{disk_budget}",
// never by a command-line flag: the spelling is the front end's. message() (so fail()) and note()
// spell each {key} through the installed speller; text built otherwise (a reason returned for the
// log, a doctor's fix) calls spell_settings() itself. The default speller writes the flag frugal's
// CLI takes for the key ("--disk-budget"); another front end (a binding, a GUI) installs its own.
#pragma once

#include <string>

namespace frugal {

using SettingSpeller = std::string (*)(const std::string& key);

// nullptr restores the default. Not thread-safe against concurrent spelling: call at start-up.
void set_setting_speller(SettingSpeller speller);

// Replaces each "{key}" naming a known setting by the speller's text; other braces stay as they are.
std::string spell_settings(const std::string& text);

}  // namespace frugal
