#include "archive/manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include <nlohmann/json.hpp>

#include "frugal/util/checked.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/hash.h"
#include "frugal/util/terminal.h"

namespace frugal {

namespace {

// A manifest lists parts of up to terabytes in a few hundred bytes each; anything larger than this
// is not a manifest, and is refused before it is read into memory.
constexpr std::uint64_t kMaxManifestBytes = 64u << 20;

std::string read_manifest_text(const std::filesystem::path& path) {
  auto text = read_file_at_most(path, kMaxManifestBytes);
  if (!text)
    fail(ErrorKind::invalid, path.string(), "a frugal-split manifest of at most 64 MiB", "a larger file",
         "give the FILE.manifest.json written by 'frugal split'");
  return *std::move(text);
}

// A part or the original file: one plain name in the manifest's folder ("x.part0001"), never a
// path ("../x", "/etc/x", "sub/x", ".") that would reach another folder.
bool is_plain_file_name(const std::string& name) {
  return name.find('/') == std::string::npos && normalize_relative(name) == name;
}

// A value as shown in a message: short, and never dump() of a nested value (dump recurses, and a
// crafted manifest nests deeply enough to overflow the stack; parsing and destruction do not).
std::string shown(const nlohmann::json& v) { return v.is_primitive() ? v.dump().substr(0, 100) : v.type_name(); }

std::uint64_t size_field(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_unsigned())
    fail(ErrorKind::invalid, where, std::string("\"") + key + "\" as a whole number of bytes", shown(v),
         "the manifest is damaged or crafted; write it again with 'frugal split'");
  return v.get<std::uint64_t>();
}

std::string string_field(const nlohmann::json& j, const char* key) { return j.at(key).get<std::string>(); }

// File names on disk are bytes; JSON strings are UTF-8. A name that is not UTF-8 (a Latin-1
// "d\xe9.zip") is stored as its UTF-8 repair (invalid bytes as U+FFFD) for people and older
// readers, and exactly as "raw_<key>_hex" beside it, which this reader prefers.
std::string utf8_repaired(const std::string& s) {
  return nlohmann::json::parse(json_text(nlohmann::json(s))).get<std::string>();
}

void put_name(nlohmann::json& j, const char* key, const std::string& name) {
  const std::string shown = utf8_repaired(name);
  j[key] = shown;
  if (shown != name) j[std::string("raw_") + key + "_hex"] = to_hex(name.data(), name.size());
}

std::string name_field(const nlohmann::json& j, const char* key, const std::string& where) {
  std::string name = string_field(j, key);
  const auto raw = j.find(std::string("raw_") + key + "_hex");
  if (raw == j.end()) return name;
  const std::string hex = raw->get<std::string>();
  std::string bytes;
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  bool ok = hex.size() % 2 == 0;
  for (std::size_t i = 0; ok && i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    ok = hi >= 0 && lo >= 0;
    bytes += static_cast<char>(hi * 16 + lo);
  }
  if (!ok || utf8_repaired(bytes) != name)
    fail(ErrorKind::invalid, where, "\"raw_" + std::string(key) + "_hex\" as the bytes of \"" + key + "\" in hex",
         "'" + hex.substr(0, 100) + "'", "the manifest is damaged or crafted; write it again with 'frugal split'");
  return bytes;
}

void parse_fields(const nlohmann::json& j, const std::string& where, SplitManifest& m) {
  if (!j.is_object())
    fail(ErrorKind::invalid, where, "a frugal-split manifest (a JSON object)", "another JSON value",
         "give the FILE.manifest.json written by 'frugal split'");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != "frugal-split")
    fail(ErrorKind::invalid, where, "\"format\": \"frugal-split\"",
         format == j.end() ? std::string("no format") : shown(*format), "give a manifest written by 'frugal split'");
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || *version != SplitManifest::kVersion)
    fail(ErrorKind::unsupported, where, "manifest version 1",
         version == j.end() ? std::string("no version") : "version " + shown(*version),
         "this frugal reads version 1 manifests; upgrade frugal");
  m.name = name_field(j, "name", where);
  if (!is_plain_file_name(m.name))
    fail(ErrorKind::invalid, where, "\"name\" as a plain file name (joined beside the manifest)",
         "'" + m.name.substr(0, 200) + "'", "the manifest may have been tampered with; do not join it");
  m.size = size_field(j, "size", where);
  m.sha256 = string_field(j, "sha256");
  const nlohmann::json& parts = j.at("parts");
  if (!parts.is_array())
    fail(ErrorKind::invalid, where, "\"parts\" as a list", parts.type_name(), "write it again with 'frugal split'");
  std::set<std::string> seen;
  std::uint64_t sum = 0;
  for (const auto& p : parts) {
    if (!p.is_object())
      fail(ErrorKind::invalid, where, "each part as {file, size, sha256}", p.type_name(),
           "write it again with 'frugal split'");
    SplitPart part{name_field(p, "file", where), size_field(p, "size", where), string_field(p, "sha256")};
    if (!is_plain_file_name(part.file))
      fail(ErrorKind::invalid, where, "part names in the manifest's folder", "'" + part.file.substr(0, 200) + "'",
           "the manifest may have been tampered with");
    if (!seen.insert(part.file).second)
      fail(ErrorKind::invalid, where, "each part listed once", "'" + part.file + "' twice",
           "the manifest may have been tampered with");
    sum = checked_add(sum, part.size, where, "the sum of the part sizes");
    m.parts.push_back(std::move(part));
  }
  if (sum != m.size)
    fail(ErrorKind::invalid, where, "parts adding up to " + std::to_string(m.size) + " bytes",
         std::to_string(sum) + " bytes", "the manifest is damaged; write it again with 'frugal split'");
}

}  // namespace

SplitManifest SplitManifest::parse(std::string_view json, const std::filesystem::path& dir, const std::string& where) {
  SplitManifest m;
  m.dir = dir;
  try {
    parse_fields(nlohmann::json::parse(json), where, m);
  } catch (const Error&) {
    throw;
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorKind::invalid, where, "a frugal-split manifest (JSON)", std::string("invalid JSON: ") + e.what(),
         "the manifest is damaged; write it again with 'frugal split'");
  } catch (const std::exception& e) {  // nlohmann's type and range errors, std::out_of_range, ...
    fail(ErrorKind::invalid, where, "the fields format, version, name, size, sha256, parts",
         std::string("a malformed manifest (") + e.what() + ")", "write it again with 'frugal split'");
  }
  return m;
}

SplitManifest SplitManifest::load(const std::filesystem::path& manifest_path) {
  return parse(read_manifest_text(manifest_path), manifest_path.parent_path(), manifest_path.string());
}

std::string SplitManifest::to_json() const {
  nlohmann::json j;
  j["format"] = "frugal-split";
  j["version"] = kVersion;
  put_name(j, "name", name);
  j["size"] = size;
  j["sha256"] = sha256;
  j["parts"] = nlohmann::json::array();
  for (const auto& p : parts) {
    nlohmann::json part;
    put_name(part, "file", p.file);
    part["size"] = p.size;
    part["sha256"] = p.sha256;
    j["parts"].push_back(std::move(part));
  }
  return json_text(j, 2) + "\n";
}

void SplitManifest::save(const std::filesystem::path& manifest_path, Env& env) const {
  write_file_atomic(env, manifest_path, to_json());
}

bool is_manifest_path(const std::filesystem::path& path) {
  const std::string s = path.filename().string();
  const std::string suffix = ".manifest.json";
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string check_part(const SplitManifest& m, std::size_t i) {
  const auto path = m.part_path(i);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  if (static_cast<std::uint64_t>(st.st_size) != m.parts[i].size)
    return "size " + std::to_string(st.st_size) + ", expected " + std::to_string(m.parts[i].size);
  UniqueFd fd = open_read(path);
  Sha256 h;
  std::vector<char> buf(1 << 20);
  std::uint64_t off = 0;
  while (off < m.parts[i].size) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), m.parts[i].size - off));
    pread_full(fd.get(), buf.data(), n, off, path.string());
    h.update(buf.data(), n);
    off += n;
  }
  std::string got = h.hex_digest();
  if (got != m.parts[i].sha256) return "SHA-256 " + got + ", expected " + m.parts[i].sha256;
  return "";
}

}  // namespace frugal
