#include "frugal/util/text.h"

#include <algorithm>
#include <sstream>

namespace frugal {

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream s(name);
  for (std::string p; std::getline(s, p, '/');)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t json_nesting(std::string_view s) {
  std::size_t depth = 0, most = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      most = std::max(most, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return most;
}

}  // namespace frugal
