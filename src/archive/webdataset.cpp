// Shard patterns and the grouping of members into samples, held to webdataset 1.0's rules
// (tariterators.py) and braceexpand's expansion by tests/archive/webdataset_test.cpp.
#include "frugal/archive/webdataset.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "archive/readers.h"
#include "frugal/archive/archive.h"
#include "frugal/archive/name_encoding.h"
#include "frugal/util/error.h"
#include "frugal/util/text.h"

namespace frugal {

namespace {

constexpr std::size_t kMaxShards = 100000;
constexpr std::size_t kMaxLabelBytes = 64 << 10;
constexpr std::size_t kMaxJsonDepth = 64;

[[noreturn]] void too_many(const std::string& pattern) {
  fail(ErrorKind::usage, pattern, "a pattern naming at most " + std::to_string(kMaxShards) + " shards", "more",
       "check the ranges in braces");
}

// braceexpand's parser, over byte strings: a pattern is a product of literals and brace groups; a
// group is an integer range, a letter range, or a comma sequence of patterns (a group that is none
// of them stays literal, braces included). Escapes ('\x') are kept through expansion and removed at
// the end, as braceexpand's _flatten does.
class Braces {
 public:
  explicit Braces(const std::string& whole) : whole_(whole) {}

  std::vector<std::string> pattern(std::string_view p) const {
    std::vector<std::vector<std::string>> items;
    std::size_t start = 0, pos = 0;
    int depth = 0;
    while (pos < p.size()) {
      if (p[pos] == '\\') {
        pos += 2;
        continue;
      }
      if (p[pos] == '{') {
        if (depth == 0 && pos > start) {
          items.push_back({std::string(p.substr(start, pos - start))});
          start = pos;
        }
        ++depth;
      } else if (p[pos] == '}') {
        --depth;
        if (depth == 0) {
          const std::string_view expr = p.substr(start + 1, pos - start - 1);
          if (auto e = expression(expr)) {
            items.push_back(std::move(*e));
          } else {
            items.push_back({"{"});
            items.push_back(pattern(expr));
            items.push_back({"}"});
          }
          start = pos + 1;
        }
      }
      ++pos;
    }
    if (depth != 0)
      fail(ErrorKind::usage, whole_, "balanced braces", "unbalanced ones",
           "close every '{' with '}' (a literal brace: '\\{')");
    if (start < pos) items.push_back({std::string(p.substr(start))});
    std::vector<std::string> out{""};
    for (const auto& item : items) {
      if (out.size() * item.size() > kMaxShards) too_many(whole_);
      std::vector<std::string> next;
      next.reserve(out.size() * item.size());
      for (const auto& a : out)
        for (const auto& b : item) next.push_back(a + b);
      out = std::move(next);
    }
    return out;
  }

 private:
  std::optional<std::vector<std::string>> expression(std::string_view e) const {
    if (auto r = int_range(e)) return r;
    if (auto r = char_range(e)) return r;
    return sequence(e);
  }

  // -?\d+ at `at`, moving it past; nullopt (at unchanged) when absent.
  static std::optional<std::string_view> signed_digits(std::string_view e, std::size_t& at) {
    std::size_t p = at;
    if (p < e.size() && e[p] == '-') ++p;
    const std::size_t d = p;
    while (p < e.size() && e[p] >= '0' && e[p] <= '9') ++p;
    if (p == d) return std::nullopt;
    std::string_view s = e.substr(at, p - at);
    at = p;
    return s;
  }

  // The optional "..-?\d+" step after a range; 0 when absent; nullopt when the rest is not one.
  static std::optional<long long> step_after(std::string_view e, std::size_t at) {
    if (at == e.size()) return 0;
    if (e.substr(at, 2) != "..") return std::nullopt;
    at += 2;
    if (at < e.size() && e[at] == '-') ++at;
    const std::size_t d = at;
    while (at < e.size() && e[at] >= '0' && e[at] <= '9') ++at;
    if (at == d || at != e.size() || at - d > 9) return std::nullopt;
    return std::stoll(std::string(e.substr(d, at - d)));
  }

  std::optional<std::vector<std::string>> int_range(std::string_view e) const {
    std::size_t at = 0;
    auto a = signed_digits(e, at);
    if (!a || e.substr(at, 2) != "..") return std::nullopt;
    at += 2;
    auto b = signed_digits(e, at);
    if (!b) return std::nullopt;
    auto step = step_after(e, at);
    if (!step) return std::nullopt;
    if (a->size() > 18 || b->size() > 18) too_many(whole_);
    auto padded = [](std::string_view s) {
      return s != "0" && s != "-0" && (s.starts_with("0") || s.starts_with("-0"));
    };
    const std::size_t width = padded(*a) || padded(*b) ? std::max(a->size(), b->size()) : 0;
    const long long from = std::stoll(std::string(*a)), to = std::stoll(std::string(*b));
    const long long inc = *step == 0 ? 1 : *step;
    if ((to > from ? to - from : from - to) / inc + 1 > static_cast<long long>(kMaxShards)) too_many(whole_);
    std::vector<std::string> out;
    char buf[48];
    for (long long v = from; from < to ? v <= to : v >= to; v += from < to ? inc : -inc) {
      std::snprintf(buf, sizeof buf, "%0*lld", static_cast<int>(width), v);
      out.emplace_back(buf);
    }
    return out;
  }

  std::optional<std::vector<std::string>> char_range(std::string_view e) const {
    auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
    if (e.size() < 4 || !letter(e[0]) || e.substr(1, 2) != ".." || !letter(e[3])) return std::nullopt;
    auto step = step_after(e, 4);
    if (!step) return std::nullopt;
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const long long from = static_cast<long long>(alphabet.find(e[0])),
                    to = static_cast<long long>(alphabet.find(e[3]));
    const long long inc = *step == 0 ? 1 : *step;
    std::vector<std::string> out;
    for (long long v = from; from < to ? v <= to : v >= to; v += from < to ? inc : -inc)
      out.emplace_back(1, alphabet[static_cast<std::size_t>(v)]);
    return out;
  }

  std::optional<std::vector<std::string>> sequence(std::string_view s) const {
    std::vector<std::string> out;
    std::size_t start = 0, pos = 0;
    int depth = 0;
    bool any = false;
    while (pos < s.size()) {
      if (s[pos] == '\\') {
        pos += 2;
        continue;
      }
      if (s[pos] == '{')
        ++depth;
      else if (s[pos] == '}')
        --depth;
      else if (s[pos] == ',' && depth == 0) {
        for (auto& x : pattern(s.substr(start, pos - start))) out.push_back(std::move(x));
        if (out.size() > kMaxShards) too_many(whole_);
        start = pos + 1;
        any = true;
      }
      ++pos;
    }
    if (depth != 0 || !any) return std::nullopt;
    for (auto& x : pattern(s.substr(std::min(start, s.size())))) out.push_back(std::move(x));
    if (out.size() > kMaxShards) too_many(whole_);
    return out;
  }

  const std::string& whole_;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  std::vector<std::string> out;
  std::size_t at = 0;
  // "::" joins patterns, as webdataset's expand_urls splits them.
  for (;;) {
    const std::size_t sep = pattern.find("::", at);
    const std::string one = pattern.substr(at, sep == std::string::npos ? std::string::npos : sep - at);
    for (auto& s : Braces(one).pattern(one)) out.push_back(unescape(s));
    if (out.size() > kMaxShards) too_many(pattern);
    if (sep == std::string::npos) break;
    at = sep + 2;
  }
  return out;
}

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  std::vector<std::string> out, missing;
  for (const std::string& name : expand_braces(pattern)) {
    if (!has_glob(name) || is_file(name)) {
      if (!is_file(name)) missing.push_back(name);
      out.push_back(name);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(name.c_str(), GLOB_NOSORT, nullptr, &g);
    std::vector<std::string> matched;
    if (rc == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        if (is_file(g.gl_pathv[i])) matched.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (matched.empty())
      fail(ErrorKind::usage, name, "shard files matching the pattern", "none", "check the folder and the pattern");
    std::sort(matched.begin(), matched.end());
    for (auto& m : matched) out.push_back(std::move(m));
    if (out.size() > kMaxShards) too_many(pattern);
  }
  if (!missing.empty())
    fail(ErrorKind::usage, missing.front(), "a shard file (the pattern names " + std::to_string(out.size()) + ")",
         "no such file" +
             (missing.size() > 1 ? "; " + std::to_string(missing.size()) + " of them are missing" : std::string()),
         "copy every shard into place, or give a pattern that names only the shards there are");
  return out;
}

namespace detail {

std::optional<std::pair<std::string_view, std::string_view>> base_plus_ext(std::string_view name) {
  const std::size_t ls = name.rfind('/');
  if (ls == std::string_view::npos) {
    const std::size_t d = name.find('.');
    if (d == std::string_view::npos || d == 0) return std::nullopt;
    return std::pair{name.substr(0, d), name.substr(d + 1)};
  }
  // The key runs to the first dot of the base name, whichever way the expression's alternatives
  // are tried; what is left to decide is whether one of them matches at all. "(?:.*/|)" may end
  // at any '/' with no newline before it ('.' does not match one), or match nothing; "[^.]+"
  // then runs from there to that dot, so the start must lie after every dot before it.
  const std::size_t dot = name.find('.', ls + 1);
  if (dot == std::string_view::npos) return std::nullopt;
  const std::size_t nl = name.find('\n');
  const auto slash_ok = [&](std::size_t k) { return nl == std::string_view::npos || k < nl; };
  bool ok = dot > ls + 1 && slash_ok(ls);
  if (!ok) {
    const std::size_t p = ls == 0 ? std::string_view::npos : name.rfind('.', ls - 1);  // last dot before the base name
    if (p == std::string_view::npos) {
      ok = true;  // the empty alternative: "[^.]+" from the start
    } else {
      const std::size_t k = name.find('/', p + 1);
      ok = k != std::string_view::npos && k < ls && slash_ok(k);
    }
  }
  if (!ok) return std::nullopt;
  return std::pair{name.substr(0, dot), name.substr(dot + 1)};
}

bool is_webdataset_meta(std::string_view name) {
  if (!name.starts_with("__")) return false;
  const std::size_t slash = name.find('/');
  if (slash == std::string_view::npos) return name.ends_with("__") || (name.size() >= 5 && name.ends_with("__\n"));
  return slash >= 4 && name.substr(slash - 2, 2) == "__";
}

namespace {

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

void read_label(WebDatasetSample& s, std::size_t entry, const std::string& suffix,
                const std::function<std::optional<std::string>(std::size_t, std::size_t)>& read) {
  s.label_suffix = suffix;
  const std::optional<std::string> bytes = read(entry, kMaxLabelBytes);
  if (!bytes) {
    s.label_problem = "'." + suffix + "' is larger than " + std::to_string(kMaxLabelBytes / 1024) + " KiB";
    return;
  }
  const std::string_view text = trim(*bytes);
  if (suffix == "cls") {
    std::string_view digits = text;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      s.label_problem = "'.cls' holds '" + std::string(text.substr(0, 40)) + "', not a class index (0, 1, 2, ...)";
      return;
    }
    s.class_index = std::stoll(std::string(digits));
  } else if (suffix == "txt") {
    if (text.empty())
      s.label_problem = "'.txt' is empty";
    else
      s.class_name = std::string(text);
  } else {
    if (json_nesting(text) > kMaxJsonDepth) {
      s.label_problem = "'.json' nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return;
    }
    const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      s.label_problem = "'.json' is not a JSON object";
      return;
    }
    for (const char* key : {"label", "cls", "class"}) {
      const auto it = j.find(key);
      if (it == j.end()) continue;
      if (it->is_number_unsigned())
        s.class_index = static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), INT64_MAX));
      else if (it->is_string() && !it->get_ref<const std::string&>().empty())
        s.class_name = it->get<std::string>();
      else
        s.label_problem = std::string("'.json' field \"") + key + "\" is neither a class index nor a class name";
      return;
    }
    s.label_problem = "'.json' has no \"label\", \"cls\" or \"class\" field";
  }
}

// Groups consecutive members by key into samples (see group_members); one member at a time.
class SampleGrouper {
 public:
  SampleGrouper(const std::function<std::optional<std::string>(std::size_t, std::size_t)>& read,
                const std::function<std::string(std::uint32_t)>& where)
      : read_(read), where_(where) {}

  void add(const WebDatasetMember& m) {
    if (shard_ && *shard_ != m.shard) flush();  // samples never span shards (webdataset's eof marker)
    shard_ = m.shard;
    const auto example = [&] { return where_(m.shard) + ":" + std::string(m.name); };
    // "/tmp/x.jpg", "../x.jpg": listed, never read (docs/data.md), counted as training counts them.
    if (is_unsafe_name(m.name)) return skip(kUnsafeNameSkip, example);
    if (!m.regular) return skip("not a file (a folder, link or device)", example);
    if (is_webdataset_meta(m.name)) return skip("metadata (__...__)", example);
    const auto kx = base_plus_ext(m.name);
    if (!kx) return skip("not part of a sample (no '.' in its base name)", example);
    const std::string suffix = lower_ascii(kx->second);
    if (!cur_.open || cur_.key != kx->first) start(std::string(kx->first), m.shard);
    // webdataset's sample dict holds __key__ and __url__ from the start: those suffixes collide too.
    if (suffix == "__key__" || suffix == "__url__" || part(suffix))
      fail(ErrorKind::invalid, example(), "one member per key and suffix",
           "a second '." + suffix + "' for the sample '" + cur_.key + "'",
           "webdataset refuses such a shard too ('duplicate file name'); rewrite the shard with one member each");
    cur_.parts.emplace_back(suffix, m.entry);
  }

  WebDatasetSamples finish() {
    flush();
    return std::move(out_);
  }

 private:
  // `example` names the member; made only for the first of each reason.
  template <class Example>
  void skip(const std::string& reason, const Example& example) {
    if (out_.skipped[reason]++ == 0) out_.examples[reason] = example();
  }

  void start(std::string key, std::uint32_t shard) {
    flush();
    cur_.open = true;
    cur_.key = std::move(key);
    cur_.shard = shard;
    cur_.parts.clear();
  }

  std::optional<std::size_t> part(std::string_view suffix) const {
    for (const auto& [sx, e] : cur_.parts)
      if (sx == suffix) return e;
    return std::nullopt;
  }

  // The sample being gathered becomes one (its first image suffix, its first label), or is skipped
  // without an image.
  void flush() {
    if (!cur_.open) return;
    cur_.open = false;
    WebDatasetSample s;
    s.key = cur_.key;
    s.shard = cur_.shard;
    s.members = cur_.parts;
    for (std::string_view sx : kWebDatasetImageSuffixes)
      if (auto e = part(sx)) {
        s.image = *e;
        s.image_suffix = std::string(sx);
        break;
      }
    if (s.image_suffix.empty())
      return skip("no image member (.jpg, .png, .webp, ...)", [&] { return where_(cur_.shard) + ":" + cur_.key; });
    for (const char* sx : {"cls", "json", "txt"})
      if (auto e = part(sx)) {
        read_label(s, *e, sx, read_);
        break;
      }
    out_.samples.push_back(std::move(s));
  }

  const std::function<std::optional<std::string>(std::size_t, std::size_t)>& read_;
  const std::function<std::string(std::uint32_t)>& where_;
  WebDatasetSamples out_;
  struct Current {
    bool open = false;
    std::string key;
    std::uint32_t shard = 0;
    std::vector<std::pair<std::string, std::size_t>> parts;  // (suffix, entry), in member order
  } cur_;
  std::optional<std::uint32_t> shard_;
};

}  // namespace

WebDatasetSamples group_members(const std::vector<WebDatasetMember>& members,
                                const std::function<std::optional<std::string>(std::size_t, std::size_t)>& read,
                                const std::function<std::string(std::uint32_t)>& where) {
  SampleGrouper grouper(read, where);
  for (const WebDatasetMember& m : members) grouper.add(m);
  return grouper.finish();
}

}  // namespace detail

WebDatasetSamples group_webdataset(const Archive& archive) {
  const auto& entries = archive.entries();
  std::vector<detail::WebDatasetMember> members;
  members.reserve(entries.size());
  std::vector<std::string> display;
  const auto layout = tar_shard_layout(archive);
  auto add = [&](std::size_t i, std::uint32_t shard, std::size_t prefix) {
    const ZipEntry& e = entries[i];
    detail::WebDatasetMember m;
    m.name = std::string_view(e.name).substr(std::min(prefix, e.name.size()));
    m.shard = shard;
    m.entry = i;
    m.regular = !e.is_dir && !e.is_symlink && e.special == SpecialMember::none;
    members.push_back(m);
  };
  if (layout) {
    for (std::size_t s = 0; s + 1 < layout->first_entry.size(); ++s)
      for (std::size_t i = layout->first_entry[s]; i < layout->first_entry[s + 1]; ++i)
        add(i, static_cast<std::uint32_t>(s), layout->prefix[s].size());
    display = layout->display;
  } else {
    for (std::size_t i = 0; i < entries.size(); ++i) add(i, 0, 0);
    display = {archive.display_name()};
  }
  return detail::group_members(
      members,
      [&](std::size_t entry, std::size_t limit) -> std::optional<std::string> {
        if (entries[entry].size > limit) return std::nullopt;
        std::vector<std::uint8_t> bytes;
        archive.read(entry, bytes);
        return std::string(bytes.begin(), bytes.end());
      },
      [&](std::uint32_t shard) { return display.at(shard); });
}

}  // namespace frugal

namespace frugal {

EntryLabels webdataset_labels(const Archive& archive) {
  const WebDatasetSamples grouped = group_webdataset(archive);
  const std::size_t n = archive.entries().size();
  EntryLabels out;
  out.column = "WebDataset";
  out.no_label = "no label (a WebDataset sample without a .cls, .txt or .json label)";
  out.label.assign(n, std::nullopt);
  out.text.assign(n, "");
  // Every member but a good sample's image is the grouping's: a label beside its image, or counted
  // in `skipped` (no image, no key, metadata, not a file) — never a sample, never counted twice.
  out.sample_member.assign(n, true);
  for (const auto& [why, count] : grouped.skipped) {
    out.skipped[why] += count;
    out.examples[why] = grouped.examples.at(why);
  }
  for (const WebDatasetSample& s : grouped.samples) {
    if (!s.label_problem.empty()) {  // counted once here, not again as "no label"
      const std::string why = "bad label (" + s.label_problem + ")";
      if (!out.skipped[why]++) out.examples[why] = archive.entries()[s.image].name;
      continue;
    }
    out.sample_member[s.image] = false;
    if (s.class_index && *s.class_index >= 0)
      out.label[s.image] = *s.class_index;
    else
      out.text[s.image] = s.class_name;
  }
  return out;
}

}  // namespace frugal
