#include "frugal/util/settings_text.h"

#include <gtest/gtest.h>

#include "frugal/util/error.h"
#include "frugal/util/progress.h"

namespace frugal {
namespace {

TEST(SettingsText, DefaultSpellsTheCommandLineFlag) {
  EXPECT_EQ(spell_settings("raise {disk_budget} or use {decode} cpu"), "raise --disk-budget or use --decode cpu");
  EXPECT_EQ(spell_settings("{amp}"), "--amp");
}

TEST(SettingsText, LeavesOtherBracesAlone) {
  // A data name, JSON and an unknown key are no setting: they reach the user as written.
  EXPECT_EQ(spell_settings("photos/{cats}/a.jpg"), "photos/{cats}/a.jpg");
  EXPECT_EQ(spell_settings(R"({"lr": 0.1} {} { amp } {Amp} {amp)"), R"({"lr": 0.1} {} { amp } {Amp} {amp)");
  EXPECT_EQ(spell_settings("no braces"), "no braces");
}

std::string as_field(const std::string& key) { return "settings." + key; }

TEST(SettingsText, AnotherFrontEndSpellsItsOwnWay) {
  set_setting_speller(as_field);
  const std::string spelled = spell_settings("raise {max_bad_fraction}");
  const Error e(ErrorKind::usage, "give a larger {gpu_memory}");
  const std::string m = message("x", "", "", "use {device} cpu");
  testing::internal::CaptureStderr();
  note("a note naming {decode}");
  const std::string noted = testing::internal::GetCapturedStderr();
  set_setting_speller(nullptr);
  EXPECT_EQ(spelled, "raise settings.max_bad_fraction");
  EXPECT_STREQ(e.what(), "give a larger settings.gpu_memory");
  EXPECT_EQ(m, "x; use settings.device cpu");
  EXPECT_EQ(noted, "a note naming settings.decode\n");
  EXPECT_EQ(spell_settings("{device}"), "--device");  // nullptr restored the default
}

}  // namespace
}  // namespace frugal
