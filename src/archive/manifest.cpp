#include "archive/manifest.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/hash.h"

namespace frugal {

SplitManifest SplitManifest::load(const std::filesystem::path& manifest_path) {
  SplitManifest m;
  m.dir = manifest_path.parent_path();
  const std::string where = manifest_path.string();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(manifest_path));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::invalid, where, "a frugal-split manifest (JSON)", std::string("invalid JSON: ") + e.what(),
         "the manifest is damaged; write it again with 'frugal split'");
  }
  try {
    if (j.value("format", "") != "frugal-split")
      fail(ErrorKind::invalid, where, "\"format\": \"frugal-split\"", j.value("format", std::string("no format")),
           "give a manifest written by 'frugal split'");
    int version = j.value("version", 0);
    if (version != kVersion)
      fail(ErrorKind::unsupported, where, "manifest version 1", "version " + std::to_string(version),
           "this frugal reads version 1 manifests; upgrade frugal");
    m.name = j.at("name").get<std::string>();
    m.size = j.at("size").get<std::uint64_t>();
    m.sha256 = j.at("sha256").get<std::string>();
    std::uint64_t sum = 0;
    for (const auto& p : j.at("parts")) {
      SplitPart part{p.at("file").get<std::string>(), p.at("size").get<std::uint64_t>(),
                     p.at("sha256").get<std::string>()};
      std::filesystem::path f(part.file);
      if (part.file.empty() || f.is_absolute() || f.has_parent_path() || part.file == ".." || part.file == ".")
        fail(ErrorKind::invalid, where, "part names in the manifest's folder", "'" + part.file + "'",
             "the manifest may have been tampered with");
      sum += part.size;
      m.parts.push_back(std::move(part));
    }
    if (sum != m.size)
      fail(ErrorKind::invalid, where, "parts adding up to " + std::to_string(m.size) + " bytes",
           std::to_string(sum) + " bytes", "the manifest is damaged; write it again with 'frugal split'");
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::invalid, where, "the fields format, version, name, size, sha256, parts",
         std::string("a malformed manifest (") + e.what() + ")", "write it again with 'frugal split'");
  }
  return m;
}

std::string SplitManifest::to_json() const {
  nlohmann::json j;
  j["format"] = "frugal-split";
  j["version"] = kVersion;
  j["name"] = name;
  j["size"] = size;
  j["sha256"] = sha256;
  j["parts"] = nlohmann::json::array();
  for (const auto& p : parts) j["parts"].push_back({{"file", p.file}, {"size", p.size}, {"sha256", p.sha256}});
  return j.dump(2) + "\n";
}

void SplitManifest::save(const std::filesystem::path& manifest_path) const {
  write_file_atomic(manifest_path, to_json());
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
