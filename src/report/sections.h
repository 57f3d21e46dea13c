// The report page's sections, each HTML from the document (report.h); "" when it has nothing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace frugal::report {

std::string utc_time(double unix_seconds);  // "2026-12-07 12:00:00 UTC", "-" when not finite
std::string curves_section(const nlohmann::json& doc);
std::string sessions_table(const nlohmann::json& doc);
std::string evaluation_sections(const nlohmann::json& eval);  // confusion, per class, worst
std::string facts_section(const nlohmann::json& doc);

}  // namespace frugal::report
