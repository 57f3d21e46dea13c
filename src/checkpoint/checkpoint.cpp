#include "frugal/checkpoint/checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/input_path.h"
#include "frugal/util/terminal.h"
#include "checkpoint/internal.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const std::string& need(const Metadata& md, const std::string& key, const std::string& where) {
  auto it = md.find(key);
  if (it == md.end())
    fail(ErrorKind::invalid, where, "metadata \"" + key + "\"", "none",
         "the file was not written by frugal or is from an incompatible version");
  return it->second;
}

nlohmann::json json_or(const Metadata& md, const std::string& key, const std::string& where) {
  auto it = md.find(key);
  if (it == md.end() || it->second.empty()) return nlohmann::json::object();
  // Bounded nesting: these values are copied and dumped again (recursively) when the run saves.
  return parse_json_bounded(it->second, where + ": metadata \"" + key + "\"");
}

std::int64_t integer(const Metadata& md, const std::string& key, const std::string& where) {
  const auto& s = need(md, key, where);
  try {
    std::size_t used = 0;
    auto v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {}
  fail(ErrorKind::invalid, where, "an integer in metadata \"" + key + "\"", "\"" + s + "\"", "the file is corrupt");
}

// A multi-label model's head (ModelInfo::multi_label): only in a version-2 file, thresholds within
// (0, 1), one for all or one per class.
void read_multi_label(const Metadata& md, const std::string& where, ModelInfo& m) {
  const auto it = md.find("multi_label");
  m.multi_label = it != md.end() && it->second == "true";
  const bool v2 = integer(md, "version", where) == kCheckpointVersionMultiLabel;
  if (m.multi_label != v2)
    fail(ErrorKind::invalid, where, "\"multi_label\" in a version-2 file only",
         std::string(m.multi_label ? "a multi-label model" : "no multi-label model") + " in a version " +
             md.at("version") + " file",
         "the file is corrupt");
  if (!m.multi_label) return;
  auto in_range = [](double t) { return std::isfinite(t) && t > 0 && t < 1; };
  const auto& text = need(md, "threshold", where);
  char* end = nullptr;
  const double t = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !in_range(t))
    fail(ErrorKind::invalid, where, "a threshold between 0 and 1 in metadata \"threshold\"", "\"" + text + "\"",
         "the file is corrupt");
  m.threshold = static_cast<float>(t);
  const nlohmann::json list = json_or(md, "thresholds", where);
  const bool ok = list.is_array() && (list.empty() || list.size() == m.classes.size()) &&
                  std::all_of(list.begin(), list.end(),
                              [&](const nlohmann::json& v) { return v.is_number() && in_range(v.get<double>()); });
  if (!ok)
    fail(ErrorKind::invalid, where,
         "a list of " + std::to_string(m.classes.size()) + " thresholds between 0 and 1 in metadata \"thresholds\"",
         list.dump().substr(0, 80), "the file is corrupt");
  m.thresholds = list.get<std::vector<float>>();
}

// Keys this file owns; anything else in the metadata is carried in Checkpoint::extra.
const char* const kOwnKeys[] = {"format",        "version",      "kind",        "model",      "classes",
                                "image_size",    "channels",     "mean",        "std",        "epoch",
                                "step",          "loader",       "schedule",    "metrics",    "config",
                                "metric_name",   "metric_value", "metric_mode", "checksum",   "module_file",
                                "module_sha256", "num_classes",  "multi_label", "thresholds", "threshold"};

bool own_key(const std::string& k) {
  for (const char* o : kOwnKeys)
    if (k == o) return true;
  return false;
}

}  // namespace

std::map<std::string, torch::Tensor> Checkpoint::weight_map() const { return {weights.begin(), weights.end()}; }

const torch::Tensor* Checkpoint::find_state(const std::string& name) const {
  for (const auto& [n, t] : state)
    if (n == name) return &t;
  return nullptr;
}

NamedTensors to_named(const std::map<std::string, torch::Tensor>& tensors) { return {tensors.begin(), tensors.end()}; }

std::string tensors_checksum(const NamedTensors& tensors) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().to(torch::kCPU).contiguous();
    XXH3_64bits_update(st, c.data_ptr(), c.nbytes());
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "xxh3-64:%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(st)));
  XXH3_freeState(st);
  return buf;
}

Metadata checkpoint_metadata(const Checkpoint& c) {
  Metadata md = c.extra;
  md["format"] = kCheckpointFormat;
  md["version"] = std::to_string(c.model.multi_label ? kCheckpointVersionMultiLabel : kCheckpointVersion);
  md["kind"] = c.kind;
  md["model"] = c.model.name;
  md["classes"] = nlohmann::json(c.model.classes).dump();
  md["image_size"] = std::to_string(c.model.image_size);
  md["channels"] = std::to_string(c.model.channels);
  if (!c.model.module_sha256.empty()) {  // a TorchScript module's weights: for that file's code
    // A path is bytes, not always UTF-8; the metadata is JSON.
    md["module_file"] = utf8_escaped(c.model.module_file);
    md["module_sha256"] = c.model.module_sha256;
    md["num_classes"] = std::to_string(c.model.classes.size());
  }
  if (c.model.multi_label) {
    md["multi_label"] = "true";
    md["threshold"] = number(c.model.threshold);
    md["thresholds"] = nlohmann::json(c.model.thresholds).dump();
  }
  md["mean"] = nlohmann::json(c.model.mean).dump();
  md["std"] = nlohmann::json(c.model.std).dump();
  md["epoch"] = std::to_string(c.epoch);
  md["step"] = std::to_string(c.step);
  md["loader"] = c.loader.dump();
  md["schedule"] = c.schedule.dump();
  md["metrics"] = c.metrics.dump();
  md["config"] = c.config.dump();
  if (c.metric_value) {
    md["metric_name"] = c.metric_name;
    md["metric_value"] = number(*c.metric_value);
    md["metric_mode"] = c.higher_is_better ? "max" : "min";
  }
  return md;
}

// On-disk tensor list: weights, then state under kStatePrefix.
NamedTensors disk_tensors(const Checkpoint& c) {
  NamedTensors all = c.weights;
  for (const auto& [name, t] : c.state) all.emplace_back(kStatePrefix + name, t);
  return all;
}

Checkpoint checkpoint_from_file(SafetensorsFile file) {
  const auto& md = file.metadata;
  const std::string& where = file.source;
  if (need(md, "format", where) != kCheckpointFormat)
    fail(ErrorKind::invalid, where, std::string("metadata format \"") + kCheckpointFormat + "\"",
         "\"" + md.at("format") + "\"", "give a checkpoint written by frugal");
  if (integer(md, "version", where) > kCheckpointVersionMultiLabel)
    fail(ErrorKind::unsupported, where, "checkpoint format version " + std::to_string(kCheckpointVersionMultiLabel),
         "version " + md.at("version"), "update frugal");
  Checkpoint c;
  c.kind = need(md, "kind", where);
  c.model.name = need(md, "model", where);
  c.model.classes = json_or(md, "classes", where).get<std::vector<std::string>>();
  c.model.image_size = static_cast<int>(integer(md, "image_size", where));
  c.model.channels = static_cast<int>(integer(md, "channels", where));
  if (c.model.name == kTorchScriptModel) {
    c.model.module_file = need(md, "module_file", where);
    c.model.module_sha256 = need(md, "module_sha256", where);
  }
  c.model.mean = json_or(md, "mean", where).get<std::vector<float>>();
  c.model.std = json_or(md, "std", where).get<std::vector<float>>();
  read_multi_label(md, where, c.model);
  c.epoch = integer(md, "epoch", where);
  c.step = integer(md, "step", where);
  c.loader = json_or(md, "loader", where);
  c.schedule = json_or(md, "schedule", where);
  c.metrics = json_or(md, "metrics", where);
  c.config = json_or(md, "config", where);
  // The trainer reads these fields with json::value<T>(), which throws a type_error for a value of
  // another type: refuse such a file here, where it is still a bad checkpoint and resume can fall
  // back to the previous one.
  for (const auto& [key, obj] : {std::pair<const char*, const nlohmann::json*>{"loader", &c.loader},
                                 {"schedule", &c.schedule},
                                 {"metrics", &c.metrics},
                                 {"config", &c.config}})
    if (!obj->is_object())
      fail(ErrorKind::invalid, where, std::string("a JSON object in \"") + key + "\"", obj->type_name(),
           "the checkpoint is damaged or crafted");
  for (const auto& [obj, key] : {std::pair<const nlohmann::json*, const char*>{&c.loader, "epoch"},
                                 {&c.loader, "position"},
                                 {&c.schedule, "micro_batch"}})
    if (obj->contains(key) && !(*obj)[key].is_number_integer())
      fail(ErrorKind::invalid, where, std::string("an integer \"") + key + "\"", (*obj)[key].type_name(),
           "the checkpoint is damaged or crafted");
  if (md.count("metric_value")) {
    c.metric_name = md.count("metric_name") ? md.at("metric_name") : "";
    c.metric_value = std::stod(md.at("metric_value"));
    c.higher_is_better = !md.count("metric_mode") || md.at("metric_mode") != "min";
  }
  for (const auto& [k, v] : md)
    if (!own_key(k)) c.extra[k] = v;
  for (auto& [name, t] : file.tensors) {
    if (name.rfind(kStatePrefix, 0) == 0)
      c.state.emplace_back(name.substr(std::string(kStatePrefix).size()), std::move(t));
    else
      c.weights.emplace_back(name, std::move(t));
  }
  return c;
}

void save_checkpoint(const fs::path& path, const Checkpoint& ckpt, Env& env) {
  if (ckpt.kind == "delta")
    fail(ErrorKind::invalid, path.string(), "a full, best or model checkpoint", "kind \"delta\"",
         "use save_delta_checkpoint");
  auto tensors = disk_tensors(ckpt);
  Metadata md = checkpoint_metadata(ckpt);
  md["checksum"] = tensors_checksum(tensors);
  save_safetensors(path, tensors, md, env);
}

namespace {

// The parsers' own exceptions (nlohmann's type errors on odd metadata, std::stod, c10's) are bad
// input: Error(invalid) naming the file, never "internal error".
template <class Fn>
auto at_load_boundary(const fs::path& path, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    throw;
  } catch (const std::filesystem::filesystem_error&) {
    throw;
  } catch (const std::exception& e) {
    fail(ErrorKind::invalid, path.string(), "a frugal checkpoint", e.what(),
         "the file is corrupt or crafted; use an earlier checkpoint");
  }
}

// Checks the payload against metadata "checksum" and decodes the tensors with the header parsed
// once; the file's bytes are released before the caller decodes further.
SafetensorsFile verified_tensors(const fs::path& path, ParsedFile f, std::string* checksum) {
  auto it = f.header.metadata.find("checksum");
  if (it == f.header.metadata.end())
    fail(ErrorKind::invalid, path.string(), "metadata \"checksum\"", "none",
         "the file was not written by frugal; for plain safetensors weights use {init}");
  const auto offset = f.header.payload_offset();
  std::string sum = payload_checksum(f.bytes.data() + offset, f.bytes.size() - offset);
  if (sum != it->second)
    fail(ErrorKind::invalid, path.string(), "payload checksum " + it->second, sum,
         "the file is corrupt or truncated; use an earlier checkpoint");
  if (checksum) *checksum = it->second;
  auto file = parse_safetensors(f.bytes, std::move(f.header), path.string());
  f.bytes.clear();
  f.bytes.shrink_to_fit();
  return file;
}

}  // namespace

ParsedFile read_parsed_file(const fs::path& path, Links links) {
  ParsedFile f;
  // A regular file's size bounds the read (a FIFO or /dev/zero would not end).
  f.bytes = *read_regular_at_most(path, std::numeric_limits<std::uint64_t>::max(), links);
  f.header = parse_safetensors_header(f.bytes.data(), f.bytes.size(), path.string());
  return f;
}

LoadedCheckpoint load_checkpoint_file(const fs::path& path, Links links) {
  return at_load_boundary(path, [&] {
    LoadedCheckpoint out;
    auto file = verified_tensors(path, read_parsed_file(path, links), &out.checksum);
    auto kind = file.metadata.find("kind");
    if (kind != file.metadata.end() && kind->second == "delta") {
      auto checksum = std::move(out.checksum);
      out = load_delta(path, std::move(file));
      out.checksum = std::move(checksum);
      return out;
    }
    out.ckpt = checkpoint_from_file(std::move(file));
    return out;
  });
}

Checkpoint base_from_parsed(const fs::path& path, ParsedFile parsed) {
  return at_load_boundary(path, [&] {
    auto file = verified_tensors(path, std::move(parsed), nullptr);
    auto kind = file.metadata.find("kind");
    if (kind != file.metadata.end() && kind->second == "delta")
      fail(ErrorKind::invalid, path.string(), "a full checkpoint (the base of a delta)", "a delta checkpoint",
           "a delta's base is always full; the files are damaged or crafted");
    return checkpoint_from_file(std::move(file));
  });
}

Checkpoint load_checkpoint(const fs::path& path, Links links) { return load_checkpoint_file(path, links).ckpt; }

CkptFile resolve_ckpt_file(const fs::path& ckpt) {
  // A missing path or a typo gets the answer every command gives for an input (exit 2, a near name).
  check_input(ckpt, InputKind::checkpoint);
  std::error_code ec;
  if (fs::is_directory(ckpt, ec)) {
    const fs::path best = ckpt / kBestFile;
    if (file_kind(best) == "nothing")
      fail(ErrorKind::usage, ckpt.string(), "a run folder holding " + std::string(kBestFile), "none",
           "give a checkpoint file, or train until the first checkpoint is saved");
    open_regular(best, Links::refuse);  // a FIFO, device or link there: exit 3 naming it, now
    return {best, Links::refuse};
  }
  if (!fs::is_regular_file(ckpt, ec))  // a pipe or device would block or feed the loader garbage
    fail(ErrorKind::usage, ckpt.string(), input_kind_name(InputKind::checkpoint),
         "a special file (a device, pipe or socket)", "give a regular file");
  return {ckpt, Links::follow};
}

Checkpoint snapshot(const Checkpoint& ckpt) {
  Checkpoint c = ckpt;  // JSON and strings copied; tensors still shared
  auto copy = [](NamedTensors& ts) {
    for (auto& [name, t] : ts)
      t = t.detach().to(t.options().device(torch::kCPU), /*non_blocking=*/false, /*copy=*/true).contiguous();
  };
  copy(c.weights);
  copy(c.state);
  return c;
}

}  // namespace frugal
