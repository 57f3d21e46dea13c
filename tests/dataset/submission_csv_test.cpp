// Issue 47 (a): cells of a submission that a spreadsheet would run (OWASP's CSV injection) and
// control characters. Before, `predict --csv` wrote =HYPERLINK(...), +cmd|' /C calc'!A0 and @SUM(...)
// class names verbatim without a word, and a NUL of a class name into the --probabilities header.
#include <gtest/gtest.h>

#include "frugal/dataset/submission_csv.h"
#include "error_message.h"

using namespace frugal;

namespace {

using frugal::testing::has;

}  // namespace

TEST(SubmissionCsv, FormulaCellsAreThoseStartingEqualsPlusMinusAtTabOrCr) {
  for (const char* cell : {"=1+2", "+cmd|' /C calc'!A0", "-2", "@SUM(1)", "\tx", "\rx"})
    EXPECT_TRUE(is_formula_cell(cell)) << cell;
  for (const char* cell : {"", "cat", "a=b", " =1", "1e5", "'=1"}) EXPECT_FALSE(is_formula_cell(cell)) << cell;
}

TEST(SubmissionCsv, FormulaCellsAreWrittenAsTheyAreUnlessEscaped) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\")"), "\"=HYPERLINK(\"\"http://x\"\")\"");
  EXPECT_EQ(csv_field("@SUM(1)"), "@SUM(1)");
  // OWASP: a ' before the cell, the cell quoted, its quotes doubled.
  EXPECT_EQ(csv_field("@SUM(1)", true), "\"'@SUM(1)\"");
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\")", true), "\"'=HYPERLINK(\"\"http://x\"\")\"");
  EXPECT_EQ(csv_field("+cmd|' /C calc'!A0", true), "\"'+cmd|' /C calc'!A0\"");
  EXPECT_EQ(csv_field("cat", true), "cat");
  // A separator of some locales' spreadsheets is quoted, so that no cell starts after it.
  EXPECT_EQ(csv_field("a;=1+2"), "\"a;=1+2\"");
  EXPECT_EQ(submission_row("=1+2", "-5", true), "\"'=1+2\",\"'-5\"\n");
  const std::vector<std::string> classes = {"@a", "b"};
  EXPECT_EQ(submission_header({}, &classes, true), "id,\"'@a\",b\n");
  const float p[] = {0.5f, 0.5f};
  EXPECT_EQ(submission_row("+x", std::span<const float>(p, 2), true), "\"'+x\",0.5,0.5\n");
}

TEST(SubmissionCsv, ControlCharactersAreNeverWrittenRaw) {
  const std::string nul("nul\0byte", 8);
  EXPECT_EQ(csv_field(nul), "nul\\x00byte");
  EXPECT_EQ(csv_field("a\tb"), "a\\tb");
  EXPECT_EQ(csv_field("a\nb,c"), "\"a\\nb,c\"");
  EXPECT_EQ(csv_field("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(csv_field("x\xc2\x9b"), "x\\u009b");
  // A tab first is escaped before it could start a formula: "\t" is text.
  EXPECT_EQ(csv_field("\t=1", true), "\\t=1");
  const std::vector<std::string> classes = {"ok", nul};
  const std::string header = submission_header({}, &classes);
  EXPECT_EQ(header.find('\0'), std::string::npos);
  EXPECT_EQ(header, "id,ok,nul\\x00byte\n");
}

TEST(SubmissionCsv, WarningsNameEachSetOnceEscaped) {
  const std::string nul("n\0", 2);
  const std::vector<std::string> names = {"=A", "cat", "+B", "=A", nul, "-\x1b[2J"};
  const auto lines = unsafe_cells_warning("sub.csv", "class name", names, false, "--csv-escape-formulas");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(has(lines[0], "sub.csv: control characters in 2 class names (\"n\\x00\", \"-\\x1b[2J\")")) << lines[0];
  EXPECT_TRUE(
      has(lines[1], "sub.csv: 3 class names (\"=A\", \"+B\", \"-\\x1b[2J\") start cells that a spreadsheet would run"))
      << lines[1];
  EXPECT_TRUE(has(lines[1], "--csv-escape-formulas")) << lines[1];
  const auto escaped = unsafe_cells_warning("sub.csv", "id", {"=A"}, true, "--csv-escape-formulas");
  ASSERT_EQ(escaped.size(), 1u);
  EXPECT_TRUE(has(escaped[0], "1 id (\"=A\") that a spreadsheet would run as formulas, written as text")) << escaped[0];
  EXPECT_TRUE(unsafe_cells_warning("sub.csv", "id", {"a", "b"}, false, "--x").empty());
  std::vector<std::string> many;
  for (int i = 0; i < 8; ++i) many.push_back("=" + std::to_string(i));
  const auto more = unsafe_cells_warning("s.csv", "id", many, false, "--x");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_TRUE(has(more[0], "8 ids (\"=0\", \"=1\", \"=2\", \"=3\", \"=4\", and 3 more)")) << more[0];
  for (const auto& l : lines) EXPECT_EQ(l.find('\x1b'), std::string::npos);
}
