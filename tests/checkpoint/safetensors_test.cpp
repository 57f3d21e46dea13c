#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "budget/fault_env.h"
#include "checkpoint/checkpoint_helpers.h"
#include "frugal/util/fs.h"
#include "frugal/checkpoint/safetensors.h"
#include "reference_python.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

using testing::error_kind;
using testing::python;
using testing::TempDir;

NamedTensors every_dtype() {
  torch::manual_seed(7);
  return {
      {"f32", torch::randn({3, 4})},
      {"f16", torch::randn({5}).to(torch::kFloat16)},
      {"bf16", torch::randn({2, 3}).to(torch::kBFloat16)},
      {"f64", torch::randn({2}, torch::kFloat64)},
      {"i64", torch::arange(6, torch::kInt64).reshape({2, 3})},
      {"i32", torch::tensor({-1, 2, 3}, torch::kInt32)},
      {"i8", torch::tensor({-128, 0, 127}, torch::kInt8)},
      {"u8", torch::tensor({0, 255, 7}, torch::kUInt8)},
      {"bool", torch::tensor({true, false, true}, torch::kBool)},
      {"scalar", torch::tensor(3.5f)},
      {"empty", torch::empty({0, 4})},
      {"strided", torch::arange(12, torch::kFloat32).reshape({3, 4}).t()},
  };
}

void expect_same(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.scalar_type(), b[i].second.scalar_type()) << a[i].first;
    EXPECT_EQ(a[i].second.sizes(), b[i].second.sizes()) << a[i].first;
    EXPECT_TRUE(torch::equal(a[i].second.contiguous(), b[i].second)) << a[i].first;
  }
}

TEST(Safetensors, RoundTripsEveryDtypeInOrderWithMetadata) {
  TempDir dir;
  auto tensors = every_dtype();
  save_safetensors(dir / "a.safetensors", tensors, {{"k", "v"}, {"json", "[1,2]"}});
  auto f = load_safetensors(dir / "a.safetensors");
  expect_same(tensors, f.tensors);
  EXPECT_EQ(f.metadata.at("k"), "v");
  EXPECT_EQ(f.metadata.at("json"), "[1,2]");
  std::string bytes = read_file(dir / "a.safetensors");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);  // payload aligned
}

TEST(Safetensors, TruncatedOrGarbledFilesAreRejectedNamingTheFile) {
  TempDir dir;
  std::string good = safetensors_bytes({{"w", torch::ones({16})}}, {});
  for (std::size_t cut : {std::size_t(3), std::size_t(20), good.size() - 1}) {
    try {
      parse_safetensors(good.substr(0, cut), "cut.safetensors");
      FAIL() << "cut at " << cut;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid);
      EXPECT_NE(std::string(e.what()).find("cut.safetensors"), std::string::npos);
    }
  }
  EXPECT_EQ(error_kind([&] { parse_safetensors(good + "extra", "long.safetensors"); }), ErrorKind::invalid);
  std::string bad_dtype = good;
  bad_dtype.replace(bad_dtype.find("F32"), 3, "F99");
  EXPECT_EQ(error_kind([&] { parse_safetensors(bad_dtype, "dtype.safetensors"); }), ErrorKind::unsupported);
}

TEST(Safetensors, DuplicateNamesAreRefused) {
  EXPECT_EQ(error_kind([] {
              safetensors_bytes({{"w", torch::ones({1})}, {"w", torch::ones({1})}}, {});
            }),
            ErrorKind::invalid);
}

// --- Cross-checks with Python's safetensors (the reference implementation) -------------------

bool python_has_safetensors(const std::string& py) {
  return !py.empty() && std::system((py + " -c 'import safetensors, torch' 2>/dev/null").c_str()) == 0;
}

int run_python(const std::string& py, const fs::path& script, const std::string& args) {
  return std::system((py + " " + script.string() + " " + args).c_str());
}

// One python process (importing torch costs seconds): it checks the file we wrote, then writes
// one for us to read.
TEST(SafetensorsPython, PythonReadsWhatWeWriteAndWeReadWhatPythonWrites) {
  auto py = python();
  if (!python_has_safetensors(py)) GTEST_SKIP() << "no python with safetensors (set FRUGAL_PYTHON)";
  TempDir dir;
  save_safetensors(dir / "ours.safetensors", every_dtype(), {{"format", "frugal-checkpoint"}});
  std::ofstream(dir / "check.py") << R"(
import sys, torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
t = load_file(sys.argv[1])
torch.manual_seed(7)
exp = {"f32": torch.randn(3, 4), "f16": torch.randn(5).half(), "bf16": torch.randn(2, 3).bfloat16(),
       "f64": torch.randn(2, dtype=torch.float64), "i64": torch.arange(6).reshape(2, 3),
       "i32": torch.tensor([-1, 2, 3], dtype=torch.int32), "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
       "u8": torch.tensor([0, 255, 7], dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
       "scalar": torch.tensor(3.5), "empty": torch.empty(0, 4),
       "strided": torch.arange(12, dtype=torch.float32).reshape(3, 4).t()}
assert set(t) == set(exp), sorted(t)
for k, v in exp.items():
    assert t[k].dtype == v.dtype and t[k].shape == v.shape and torch.equal(t[k], v), k
with safe_open(sys.argv[1], "pt") as f:
    assert f.metadata() == {"format": "frugal-checkpoint"}, f.metadata()
save_file({"a": torch.arange(10, dtype=torch.float32).reshape(2, 5), "b": torch.tensor([1, -2], dtype=torch.int64),
           "c": torch.tensor([1.5, -2.25]).half(), "d": torch.tensor([True, False]), "e": torch.ones(3).bfloat16()},
          sys.argv[2], metadata={"model": "cnn"})
)";
  ASSERT_EQ(
      run_python(py, dir / "check.py", (dir / "ours.safetensors").string() + " " + (dir / "py.safetensors").string()),
      0);
  auto f = load_safetensors(dir / "py.safetensors");
  EXPECT_EQ(f.metadata.at("model"), "cnn");
  EXPECT_TRUE(torch::equal(f.get("a"), torch::arange(10, torch::kFloat32).reshape({2, 5})));
  EXPECT_TRUE(torch::equal(f.get("b"), torch::tensor({1, -2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(f.get("c"), torch::tensor({1.5, -2.25}).to(torch::kFloat16)));
  EXPECT_TRUE(torch::equal(f.get("d"), torch::tensor({true, false})));
  EXPECT_TRUE(torch::equal(f.get("e"), torch::ones({3}).to(torch::kBFloat16)));
}

}  // namespace
}  // namespace frugal
