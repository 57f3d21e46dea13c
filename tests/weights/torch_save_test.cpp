// frugal's torch.save reader against Python's torch.load: tests/weights/make_torch_save.py writes
// files with the .venv's torch (torchvision's resnet18 and efficientnet_b0, plain and OrderedDict,
// nested, DDP-prefixed, every dtype frugal reads, 0-d tensors, strided and offset views, protocols 4
// and 5, CRC off) and what torch.load reads from each; every name, dtype, shape, stride, offset and
// the SHA-256 of every tensor's bytes must agree. The files frugal must refuse (legacy format,
// TorchScript, a pickled module, live os.system/eval/exec/torch.load payloads) are refused with
// exit 3 and the words the script names, and the payloads' marker file is never created.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "budget/fault_env.h"
#include "made_once.h"
#include "reference_python.h"
#include "frugal/util/error.h"
#include "frugal/util/hash.h"
#include "frugal/weights/torch_save.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::python;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The files, made once per build tree (again when the script changes), as the image and data
// fixtures are; empty when the .venv has no torch and torchvision.
fs::path torch_save_fixtures() {
  const fs::path src = fs::path(FRUGAL_SOURCE_DIR) / "tests/weights/make_torch_save.py";
  const std::string py = python();
  if (py.empty() || std::system((py + " -c 'import torch, torchvision' 2>/dev/null").c_str()) != 0) return {};
  return testing::made_once(fs::path(FRUGAL_BINARY_DIR) / "test-fixtures/torch_save", src, [&](const fs::path& tmp) {
    fs::create_directories(tmp);
    if (std::system(("OMP_NUM_THREADS=1 " + py + " " + src.string() + " " + tmp.string() + " 2>/dev/null").c_str()) ==
        0)
      return true;
    ADD_FAILURE() << "make_torch_save.py failed";
    return false;
  });
}

class TorchSaveVsTorchLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = torch_save_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "needs the .venv's torch and torchvision";
  }
  std::vector<fs::path> cases(const char* ext) const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().extension() == ext) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(TorchSaveVsTorchLoad, EveryTensorAsTorchLoadReadsIt) {
  const auto refs = cases(".json");
  ASSERT_GE(refs.size(), 12u);
  for (const fs::path& ref_path : refs) {
    SCOPED_TRACE(ref_path.stem().string());
    const auto ref = nlohmann::json::parse(slurp(ref_path));
    const TorchSaveFile f = TorchSaveFile::open(fs::path(ref_path).replace_extension(".pth"));
    EXPECT_EQ(f.found_under(), ref["found_under"].get<std::string>());
    EXPECT_EQ(f.prefix_removed(), ref["prefix_removed"].get<std::string>());
    ASSERT_EQ(f.tensors().size(), ref["tensors"].size());  // 0 missing, 0 unexpected
    for (std::size_t i = 0; i < f.tensors().size(); ++i) {
      const SavedTensor& t = f.tensors()[i];
      const auto& r = ref["tensors"][i];
      SCOPED_TRACE(r["name"].get<std::string>());
      EXPECT_EQ(t.name, r["name"].get<std::string>());
      EXPECT_EQ(t.dtype, r["dtype"].get<std::string>());
      EXPECT_EQ(t.shape, r["shape"].get<std::vector<std::int64_t>>());
      EXPECT_EQ(t.strides, r["strides"].get<std::vector<std::int64_t>>());
      EXPECT_EQ(t.storage_offset, r["offset"].get<std::uint64_t>());
      const auto bytes = f.tensor_bytes(t);
      EXPECT_EQ(bytes.size(), t.numel() * t.item_size);
      EXPECT_EQ(sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())),
                r["sha256"].get<std::string>());
    }
  }
}

TEST_F(TorchSaveVsTorchLoad, ViewsAndTiedWeightsShareTheirStorage) {
  const TorchSaveFile f = TorchSaveFile::open(dir_ / "dtypes_and_views.pth");
  auto find = [&](const std::string& name) -> const SavedTensor& {
    for (const auto& t : f.tensors())
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  };
  EXPECT_EQ(find("tied_a").storage_key, find("tied_b").storage_key);
  EXPECT_EQ(find("columns").storage_key, find("rows").storage_key);
  EXPECT_EQ(find("columns").storage_key, find("transposed").storage_key);
  EXPECT_FALSE(find("columns").contiguous());
  EXPECT_TRUE(find("rows").contiguous());
  EXPECT_EQ(find("rows").byte_begin, 24u * 4);
  EXPECT_EQ(find("rows").byte_end, 48u * 4);
  EXPECT_TRUE(find("num_batches_tracked").shape.empty());
  EXPECT_EQ(find("empty").numel(), 0u);
  // The whole storage: what the tensor side copies once for every view of it.
  const auto whole = f.storage(find("rows").storage_key);
  ASSERT_EQ(whole.size(), 48u * 4);
  float v = 0;
  std::memcpy(&v, whole.data() + 47 * 4, 4);
  EXPECT_EQ(v, 47.0f);
}

TEST_F(TorchSaveVsTorchLoad, RefusedFilesSayWhyWithExitThreeAndRunNothing) {
  const auto refused = cases(".refused");
  ASSERT_GE(refused.size(), 10u);
  // The payloads create "pwned" in the folder they are loaded from.
  testing::TempDir cwd;
  const fs::path here = fs::current_path();
  fs::current_path(cwd.path());
  for (const fs::path& r : refused) {
    SCOPED_TRACE(r.stem().string());
    const std::string words = slurp(r);
    try {
      TorchSaveFile::open(fs::path(r).replace_extension(".pth"));
      ADD_FAILURE() << "read without error";
    } catch (const Error& e) {
      EXPECT_EQ(exit_code(e.kind()), 3);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(r.stem().string() + ".pth"), std::string::npos) << e.what();
    }
  }
  fs::current_path(here);
  EXPECT_FALSE(fs::exists(cwd / "pwned"));
}

TEST(TorchSaveFileKinds, AFifoOrADeviceIsRefusedUnread) {
  testing::TempDir dir;
  const fs::path fifo = dir / "weights.pth";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  try {
    TorchSaveFile::open(fifo);  // would block forever on a plain open()
    ADD_FAILURE() << "a FIFO was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  }
  const fs::path zero = dir / "zero.pth";
  fs::create_symlink("/dev/zero", zero);
  EXPECT_THROW(TorchSaveFile::open(zero), Error);
}

}  // namespace
}  // namespace frugal
