# make demo  - install what is missing, build what the demo runs, run the whole workflow on built-in data
# make tools - install what is missing, build frugal and frugal-torch only
# make test  - install, build everything, run every test
# make bench - run the benchmarks (ratios against baselines measured in the same run)
# make sanitize - the torch-free unit tests under ASan+UBSan and TSan (scripts/sanitize.sh)
# make tidy  - clang-tidy over the torch-free code (scripts/tidy.sh; its compile database in build-tidy/)
# make python - install the Python package frugal into .venv, built against its torch (docs/python.md)
# make wheel - a binary wheel of frugal for .venv's torch in dist/ (scripts/make_wheel.sh; docs/python.md)
# make frugal - the torch-free frugal alone (pack, split, join, verify, ls, extract), no PyTorch download
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# What scripts/demo.sh runs (scripts/check-onnx.py runs frugal too); tests and benchmarks are
# built by `make test` and `make bench`.
DEMO_TARGETS = frugal frugal-torch

.PHONY: all setup configure build tools test demo bench fuzz sanitize tidy python wheel frugal clean

all: build

setup:
	@FRUGAL_BUILD=$(BUILD) scripts/setup.sh

# A new build folder compiles each LibTorch library as one file (cmake/frugal.cmake: a third of the
# CPU time); CMAKE_FLAGS=-DFRUGAL_UNITY_BUILD=OFF for one file per file. When set-up put the build
# on another disk (.frugal-prefix), ccache keeps its files there too.
$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRUGAL_UNITY_BUILD=ON \
	  $$(test -f .frugal-prefix && echo "-DFRUGAL_CCACHE_DIR=$$(cat .frugal-prefix)/cache/ccache") \
	  $(CMAKE_FLAGS) >$(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }

configure: setup $(BUILD)/build.ninja

build: configure
	@ninja -C $(BUILD) -j $(JOBS)

test: build
	@scripts/test.sh $(BUILD)

# frugal and frugal-torch alone (a notebook's build)
tools: configure
	@ninja -C $(BUILD) -j $(JOBS) $(DEMO_TARGETS)

demo: tools
	@scripts/demo.sh $(BUILD)

bench: build
	@bench/run-all.sh $(BUILD)

fuzz: setup
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-300} scripts/fuzz.sh

sanitize: setup
	@scripts/sanitize.sh

# pip through scikit-build-core (pyproject.toml), in this checkout's build folder (what `make build`
# compiled is reused: only frugal._core is linked and installed); --no-build-isolation so that it
# builds against .venv's torch.
python: configure
	@.venv/bin/python -m pip install -q --no-build-isolation --no-deps -C build-dir=$(BUILD) \
	  -C cmake.define.FRUGAL_TESTS=ON -C cmake.define.FRUGAL_BENCH=ON . && \
	  .venv/bin/python -c "import frugal; print('frugal', frugal.__version__, 'for torch', frugal._build_info.torch_version, 'installed in .venv')"

tidy:
	@scripts/tidy.sh

clean:
	rm -rf $(BUILD) $(BUILD).configure.log build-fuzz build-tidy build-asan build-asan.configure.log build-tsan build-tsan.configure.log build-archive build-archive.configure.log dist

# The programs, the Python package and the libraries they need but torch's, in one wheel for
# .venv's torch (scripts/make_wheel.sh): `pip install dist/frugal-*.whl` in seconds, no compiler.
wheel: configure
	@scripts/make_wheel.sh $(BUILD)

# The laptop step of the notebook guide (pack and split) needs only the torch-free frugal: set-up
# installs the Debian packages alone and build-archive/ builds it without LibTorch (parquet DATA
# only when a pyarrow is already in .venv). The program is build-archive/bin/frugal.
ARCHIVE_BUILD ?= build-archive
frugal:
	@FRUGAL_SETUP_NO_TORCH=1 scripts/setup.sh
	@cmake -S . -B $(ARCHIVE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRUGAL_WITH_TORCH=OFF \
	  -DFRUGAL_TESTS=OFF -DFRUGAL_BENCH=OFF -DFRUGAL_PYTHON_MODULE=OFF \
	  -DFRUGAL_PARQUET=$$(.venv/bin/python -c 'import pyarrow' 2>/dev/null && echo ON || echo OFF) \
	  >$(ARCHIVE_BUILD).configure.log 2>&1 || { cat $(ARCHIVE_BUILD).configure.log; exit 1; }
	@ninja -C $(ARCHIVE_BUILD) -j $(JOBS) frugal
	@echo "built $(ARCHIVE_BUILD)/bin/frugal (torch-free: pack, split, join, verify, ls, extract)"
