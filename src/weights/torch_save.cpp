// torch.save's zip (PyTorch's caffe2/serialize/inline_container.h, PyTorchStreamWriter): every record
// under one top folder, the pickle in data.pkl, each storage's raw bytes in data/<key> stored
// uncompressed (64-byte aligned for mmap), the byte order in byteorder (absent before 1.12: little).
// Read through frugal's zip reader, so the hostile-zip rules (overlaps, lying sizes, CRC) hold here too.
#include "frugal/weights/torch_save.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "weights/state_dict.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

// A state dict's pickle is ~100 bytes a tensor: 32 MiB is some 300 000 tensors.
constexpr std::uint64_t kMaxPickle = std::uint64_t{32} << 20;

// torch.save's format before 1.6: a pickled magic number (LONG1 0x1950a86a20f9469cfc6c) first.
constexpr std::uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                         0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

void check_kind(std::span<const std::uint8_t> head, const std::string& name) {
  const std::string kind = torch_file_kind(head);
  if (kind == "zip") return;
  if (kind == "legacy")
    fail(ErrorKind::unsupported, name, "torch.save's zip format (PyTorch 1.6 and later)",
         "its legacy format (PyTorch before 1.6)",
         "convert it once with a current PyTorch: python -c \"import torch; torch.save(torch.load('" + name +
             "'), 'converted.pth')\", then give converted.pth");
  std::string first;
  for (std::size_t k = 0; k < head.size() && k < 4; ++k) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x", head[k]);
    first += hex;
  }
  fail(ErrorKind::invalid, name, "a torch.save file (a zip holding data.pkl)",
       head.empty() ? std::string("an empty file") : "a file starting with the bytes " + first,
       "give the .pth/.pt file torch.save wrote");
}

}  // namespace

std::string torch_file_kind(std::span<const std::uint8_t> head) {
  if (head.size() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) return "zip";
  if (head.size() >= sizeof kLegacyMagic && std::memcmp(head.data(), kLegacyMagic, sizeof kLegacyMagic) == 0)
    return "legacy";
  return "";
}

std::uint64_t SavedTensor::numel() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);  // checked when the file was read
  return n;
}

bool SavedTensor::contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

TorchSaveFile::TorchSaveFile(TorchSaveFile&&) noexcept = default;
TorchSaveFile& TorchSaveFile::operator=(TorchSaveFile&&) noexcept = default;
TorchSaveFile::~TorchSaveFile() = default;

TorchSaveFile TorchSaveFile::open(const fs::path& path, Links links) {
  UniqueFd fd = open_regular(path, links);  // a FIFO or device is refused unread
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("stat", path.string(), errno);
  std::uint8_t head[16] = {};
  const std::size_t n =
      static_cast<std::size_t>(std::min<std::uint64_t>(sizeof head, static_cast<std::uint64_t>(st.st_size)));
  pread_full(fd.get(), head, n, 0, path.string());
  check_kind(std::span<const std::uint8_t>(head, n), path.string());
  TorchSaveFile f;
  f.display_name_ = path.string();
  f.archive_ = Archive::open(path);
  f.init();
  return f;
}

TorchSaveFile TorchSaveFile::from_bytes(std::string bytes, const std::string& name) {
  check_kind(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                           std::min<std::size_t>(bytes.size(), 16)),
             name);
  TorchSaveFile f;
  f.display_name_ = name;
  f.archive_ = Archive::open(memory_byte_source(std::move(bytes), name), name);
  f.init();
  return f;
}

namespace {

// Entry i whole or in pieces. torch.save may be told not to compute CRC-32s
// (torch.serialization.set_crc32_options(False)) and then writes 0; torch.load reads such files,
// so a stored record whose CRC field is 0 is read unchecked.
void read_record(const Archive& a, std::size_t i, const std::function<void(std::span<const std::uint8_t>)>& sink) {
  const ZipEntry& e = a.entries()[i];
  if (e.crc32 == 0 && e.size > 0 && e.method == 0) {
    const auto view = a.stored_view(i);
    if (!view)
      fail(ErrorKind::invalid, a.display_name() + ":" + e.name, "a stored record inside the file", "one that is not",
           "the file is truncated or damaged; copy it again");
    sink(*view);
    a.source().check_intact();
    return;
  }
  a.read_to(i, sink);
}

std::string read_small(const Archive& a, std::size_t i, std::uint64_t max_bytes, const char* what) {
  const ZipEntry& e = a.entries()[i];
  if (e.size > max_bytes)
    fail(ErrorKind::invalid, a.display_name() + ":" + e.name,
         std::string(what) + " of at most " + std::to_string(max_bytes) + " bytes", std::to_string(e.size) + " bytes",
         "this is not a state dict frugal reads; save the model's state dict alone");
  std::string out;
  read_record(a, i, [&](std::span<const std::uint8_t> piece) {
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  });
  return out;
}

}  // namespace

void TorchSaveFile::init() {
  const auto& entries = archive_->entries();
  const std::string& name = display_name_;
  if (entries.empty() || entries.front().name.find('/') == std::string::npos)
    fail(ErrorKind::invalid, name, "a torch.save file (a zip whose records lie in one folder, NAME/data.pkl)",
         entries.empty() ? std::string("an empty zip") : "a zip starting with '" + entries.front().name + "'",
         "give the .pth/.pt file torch.save wrote");
  // As PyTorch's reader does: the top folder is the first record's.
  prefix_ = entries.front().name.substr(0, entries.front().name.find('/') + 1);
  refuse_duplicate_names(*archive_);
  if (archive_->find(prefix_ + "constants.pkl") || std::any_of(entries.begin(), entries.end(), [&](const ZipEntry& e) {
        return e.name.starts_with(prefix_ + "code/");
      }))
    fail(ErrorKind::unsupported, name, "a state dict saved by torch.save", "a TorchScript module (torch.jit.save)",
         "give it where a model is taken, or save its weights from Python: "
         "torch.save(torch.jit.load('" +
             name + "').state_dict(), 'weights.pth')");
  const auto pkl = archive_->find(prefix_ + "data.pkl");
  if (!pkl)
    fail(ErrorKind::invalid, name, "a torch.save file (" + prefix_ + "data.pkl in the zip)", "a zip without it",
         "give the .pth/.pt file torch.save wrote");
  if (const auto order = archive_->find(prefix_ + "byteorder")) {
    const std::string bo = read_small(*archive_, *order, 16, "a byte order");
    if (bo == "big")
      fail(ErrorKind::unsupported, name, "tensors in little-endian byte order", "big-endian ones",
           "load and save it again with torch.save on a little-endian machine (x86, ARM)");
    if (bo != "little")
      fail(ErrorKind::invalid, name + ":" + prefix_ + "byteorder", "'little' or 'big'", "'" + bo + "'",
           "the file is corrupt");
  }
  const std::string pickle = read_small(*archive_, *pkl, kMaxPickle, "a pickle");
  StateDict sd = read_state_dict_pickle(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(pickle.data()), pickle.size()), name);
  for (const SavedTensor& t : sd.tensors) {
    const ZipEntry& e = entries[storage_entry(t.storage_key)];
    // torch.save stores storages uncompressed; holding them to that keeps every size below the file's.
    if (e.method != 0)
      fail(ErrorKind::invalid, name + ":" + e.name, "a storage record stored uncompressed, as torch.save writes it",
           method_name(e.method), "the file was zipped again by another tool; save it again with torch.save");
    if (e.size != t.storage_bytes)
      fail(ErrorKind::invalid, name + ":" + e.name,
           std::to_string(t.storage_bytes) + " bytes for tensor '" + t.name + "''s storage",
           std::to_string(e.size) + " bytes", "the file is corrupt or crafted; save it again with torch.save");
  }
  tensors_ = std::move(sd.tensors);
  found_under_ = std::move(sd.found_under);
  prefix_removed_ = std::move(sd.prefix_removed);
}

std::size_t TorchSaveFile::storage_entry(const std::string& key) const {
  const auto i = archive_->find(prefix_ + "data/" + key);
  if (!i)
    fail(ErrorKind::invalid, display_name_, "the storage record " + prefix_ + "data/" + key + " the pickle names",
         "no such record", "the file is truncated or crafted; save it again with torch.save");
  return *i;
}

void TorchSaveFile::read_storage(const std::string& key, std::span<std::uint8_t> out) const {
  const std::size_t i = storage_entry(key);
  if (out.size() != archive_->entries()[i].size)
    fail(ErrorKind::usage, display_name_ + ":" + archive_->entries()[i].name,
         "a buffer of " + std::to_string(archive_->entries()[i].size) + " bytes", std::to_string(out.size()), "");
  std::size_t at = 0;
  read_record(*archive_, i, [&](std::span<const std::uint8_t> piece) {
    std::memcpy(out.data() + at, piece.data(), piece.size());  // the reader never passes the declared size
    at += piece.size();
  });
}

std::vector<std::uint8_t> TorchSaveFile::storage(const std::string& key) const {
  std::vector<std::uint8_t> out(archive_->entries()[storage_entry(key)].size);
  read_storage(key, out);
  return out;
}

std::vector<std::uint8_t> TorchSaveFile::tensor_bytes(const SavedTensor& t) const {
  const std::uint64_t n = t.numel();
  if (n == 0) return {};
  if (t.contiguous()) {
    std::vector<std::uint8_t> out(t.byte_end - t.byte_begin);
    std::uint64_t at = 0;  // the piece's offset in the record
    read_record(*archive_, storage_entry(t.storage_key), [&](std::span<const std::uint8_t> piece) {
      const std::uint64_t lo = std::max(at, t.byte_begin), hi = std::min(at + piece.size(), t.byte_end);
      if (lo < hi) std::memcpy(out.data() + (lo - t.byte_begin), piece.data() + (lo - at), hi - lo);
      at += piece.size();
    });
    return out;
  }
  // A strided view: each element gathered, the last dimension fastest (C order).
  const std::vector<std::uint8_t> record = storage(t.storage_key);
  std::vector<std::uint8_t> out(n * t.item_size);
  std::vector<std::int64_t> index(t.shape.size(), 0);
  for (std::uint64_t k = 0; k < n; ++k) {
    std::uint64_t element = t.storage_offset;
    for (std::size_t d = 0; d < index.size(); ++d) element += static_cast<std::uint64_t>(index[d] * t.strides[d]);
    std::memcpy(out.data() + k * t.item_size, record.data() + element * t.item_size, t.item_size);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace frugal
