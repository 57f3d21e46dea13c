// --class-weights (training/class_weights.h): "auto" against scikit-learn's
// compute_class_weight("balanced") on the same labels, and the file's rules.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frugal/training/class_weights.h"
#include "frugal/util/error.h"
#include "reference_python.h"
#include "test_files.h"

namespace frugal {
namespace {

TEST(ClassWeights, BalancedMatchesScikitLearn) {
  const std::vector<std::int64_t> counts = {5400, 600, 37, 1, 2962};
  const std::vector<double> ours = balanced_class_weights(counts);
  const std::string py = testing::python();
  if (py.empty() || std::system((py + " -c 'import sklearn' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "no Python with scikit-learn (.venv)";
  std::string labels;
  for (std::size_t c = 0; c < counts.size(); ++c)
    labels += "[" + std::to_string(c) + "]*" + std::to_string(counts[c]) + "+";
  labels += "[]";
  const std::string cmd = py +
                          " -c 'import numpy as np; from sklearn.utils.class_weight import compute_class_weight as w; "
                          "y = np.array(" +
                          labels +
                          "); print(\" \".join(repr(float(v)) for v in w(\"balanced\", classes=np.unique(y), y=y)))'";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  ASSERT_EQ(::pclose(p), 0) << cmd;
  std::istringstream in(std::string(buf, n));
  for (std::size_t c = 0; c < counts.size(); ++c) {
    double ref = 0;
    ASSERT_TRUE(in >> ref) << "class " << c;
    EXPECT_DOUBLE_EQ(ours[c], ref) << "class " << c;
  }
  EXPECT_EQ(balanced_class_weights({3, 0})[1], 0.0);  // no image: 0, not a division by zero
}

TEST(ClassWeights, FileNamesEveryClassOnce) {
  const auto dir = testing::fresh_dir("class-weights");
  const std::vector<std::string> classes = {"cat", "dog", "eel"};
  auto file = [&](const std::string& name, const std::string& text) {
    testing::write(dir / name, text);
    return (dir / name).string();
  };
  EXPECT_EQ(read_class_weights(file("ok.csv", "class,weight\ncat,1\n# eels are rare\ndog, 2.5\n\neel,10\n"), classes),
            (std::vector<double>{1, 2.5, 10}));
  auto refused = [&](const std::string& name, const std::string& text, const std::string& says) {
    try {
      read_class_weights(file(name, text), classes);
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid) << name;
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << name << ": " << e.what();
    }
  };
  refused("missing.csv", "cat,1\ndog,1\n", "eel");
  refused("unknown.csv", "cat,1\ndog,1\neel,1\nfox,1\n", "fox");
  refused("twice.csv", "cat,1\ncat,2\ndog,1\neel,1\n", "again");
  refused("negative.csv", "cat,-1\ndog,1\neel,1\n", "-1");
  refused("nan.csv", "cat,nan\ndog,1\neel,1\n", "nan");
  refused("no-comma.csv", "cat 1\n", "CLASS,WEIGHT");
}

}  // namespace
}  // namespace frugal
