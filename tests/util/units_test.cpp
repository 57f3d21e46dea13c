#include <gtest/gtest.h>

#include "frugal/util/error.h"
#include "frugal/util/units.h"

using namespace frugal;

TEST(ParseSize, BinaryAndDecimalUnitsFollowTheConvention) {
  EXPECT_EQ(parse_size("512K"), 512u * 1024);
  EXPECT_EQ(parse_size("1000M"), 1000ull * 1024 * 1024);
  EXPECT_EQ(parse_size("1.5G"), 3ull * 512 * 1024 * 1024);
  EXPECT_EQ(parse_size("5GiB"), 5ull << 30);
  EXPECT_EQ(parse_size("5GB"), 5000000000ull);
  EXPECT_EQ(parse_size("2kb"), 2000u);
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
}

TEST(ParseSize, GarbageIsAUsageError) {
  for (const char* bad : {"", "G", "12X", "1.2.3G", "5GiBs", "-5M"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
    }
  }
}

TEST(ParseDuration, HoursMinutesSeconds) {
  EXPECT_EQ(parse_duration("90s").count(), 90);
  EXPECT_EQ(parse_duration("30m").count(), 1800);
  EXPECT_EQ(parse_duration("7h30m").count(), 27000);
  EXPECT_EQ(parse_duration("8h").count(), 28800);
  EXPECT_EQ(parse_duration("45").count(), 45);
  EXPECT_THROW(parse_duration("1h30"), Error);
  EXPECT_THROW(parse_duration("abc"), Error);
}

TEST(FormatSize, ReadableUnits) {
  EXPECT_EQ(format_size(100), "100 B");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_duration(std::chrono::seconds(5400)), "1h30m");
  EXPECT_EQ(format_duration(std::chrono::seconds(59)), "59s");
}

TEST(ErrorMessage, NamesWhereExpectedFoundAndFix) {
  EXPECT_EQ(message("a.zip:x.png", "CRC 00000001", "CRC 00000002", "download it again"),
            "a.zip:x.png: expected CRC 00000001, found CRC 00000002; download it again");
  EXPECT_EQ(exit_code(ErrorKind::budget), 4);
  EXPECT_EQ(exit_code(ErrorKind::invalid), 3);
  EXPECT_EQ(exit_code(ErrorKind::interrupted), 75);
}
