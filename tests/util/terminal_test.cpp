#include "frugal/util/terminal.h"
#include "frugal/util/progress.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

TEST(Printable, ControlCharactersFromDataAreEscapedNotSentToTheTerminal) {
  // An entry named so that, printed raw, it erases the line and forges another.
  EXPECT_EQ(printable("a\x1b[2K\rOK"), "a\\x1b[2K\\rOK");
  EXPECT_EQ(printable("tab\there\nnew"), "tab\\there\\nnew");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  // C1 controls as UTF-8 (U+009B is a one-byte CSI on some terminals).
  EXPECT_EQ(printable("c1\xc2\x9b"
                      "2J"),
            "c1\\u009b2J");
  // Direction overrides reorder what is shown (Trojan Source).
  EXPECT_EQ(printable("cat\xe2\x80\xaegpj.exe"), "cat\\u202egpj.exe");
}

TEST(Printable, NamesInOtherScriptsAreKeptAndInvalidBytesAreShownAsHex) {
  EXPECT_EQ(printable("caf\xc3\xa9/\xe4\xb8\xad\xe6\x96\x87.jpg"), "caf\xc3\xa9/\xe4\xb8\xad\xe6\x96\x87.jpg");
  EXPECT_EQ(printable("cls\xff"), "cls\\xff");
  EXPECT_EQ(printable("cls\xfe"), "cls\\xfe");
  EXPECT_NE(printable("cls\xff"), printable("cls\xfe"));    // two raw names stay two
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("cut\xe4\xb8"), "cut\\xe4\\xb8");
  EXPECT_TRUE(is_printable("plain name.png"));
  EXPECT_FALSE(is_printable("a\x1b"));
  EXPECT_FALSE(is_printable("cls\xff"));
}

TEST(JsonText, BytesThatAreNotUtf8DoNotBreakTheDocument) {
  nlohmann::json j = {{"path", std::string("d\xe9.zip")}, {"esc", "a\x1b"}};
  const std::string text = json_text(j);
  EXPECT_NE(text.find("d\xef\xbf\xbd.zip"), std::string::npos);
  EXPECT_NE(text.find("\\u001b"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

// Issue 47 (b): nlohmann writes DEL, C1 controls and direction overrides raw; a --json document
// shown on a terminal acted on them (split/pack/join --json of a file named with them).
TEST(JsonText, DelC1ControlsAndDirectionOverridesAreWrittenAsEscapes) {
  const std::string name = "a\x7f b\xc2\x9b[2J c\xe2\x80\xae d\xc3\xa9 e\xe7\x8c\xab";
  const std::string text = json_text({{"name", name}});
  EXPECT_EQ(text, "{\"name\":\"a\\u007f b\\u009b[2J c\\u202e d\xc3\xa9 e\xe7\x8c\xab\"}");
  EXPECT_EQ(nlohmann::json::parse(text)["name"], name);  // the same document
  EXPECT_TRUE(is_printable(text));
}

TEST(Utf8Escaped, OnlyBytesThatAreNotUtf8AreEscapedSoDifferentPathsStayDifferent) {
  EXPECT_EQ(utf8_escaped("/data/d\xe9.zip"), "/data/d\\xe9.zip");
  EXPECT_NE(utf8_escaped("r\xe9"), utf8_escaped("r\xe8"));
  EXPECT_EQ(utf8_escaped("caf\xc3\xa9/\xe7\x8c\xab\ttab"), "caf\xc3\xa9/\xe7\x8c\xab\ttab");  // valid: unchanged
  EXPECT_EQ(utf8_escaped("\xc3"), "\\xc3");                                                   // a sequence cut short
  const nlohmann::json j = utf8_escaped("d\xff\xfe");
  EXPECT_NO_THROW((void)j.dump());
}

TEST(StderrRedraws, PlainLinesInNotebooksAndWhenForced) {
  ::setenv("FRUGAL_PROGRESS", "plain", 1);
  EXPECT_FALSE(stderr_redraws());
  ::setenv("FRUGAL_PROGRESS", "bar", 1);
  EXPECT_TRUE(stderr_redraws());
  ::unsetenv("FRUGAL_PROGRESS");
  ::setenv("JPY_PARENT_PID", "1", 1);
  EXPECT_FALSE(stderr_redraws());  // whatever stderr is: a notebook's pty keeps every redraw
  ::unsetenv("JPY_PARENT_PID");
}

}  // namespace
}  // namespace frugal

namespace frugal {
namespace {

// --json quiets notes and progress so that a command's stdout is its document; a warning is still
// for the person reading stderr (train --json used to silence the one warning training printed).
TEST(Warn, WarningsReachStderrWhenNotesAreQuiet) {
  Progress::set_quiet(true);
  ::testing::internal::CaptureStderr();
  note("a note");
  warn("disk nearly full: \x1b[2K");
  const std::string err = ::testing::internal::GetCapturedStderr();
  Progress::set_quiet(false);
  EXPECT_EQ(err, "frugal: warning: disk nearly full: \\x1b[2K\n");
}

}  // namespace
}  // namespace frugal
