# make demo  - install what is missing, build, run the whole workflow on built-in data
# make test  - install, build, run every test
# make bench - run the benchmarks (ratios against baselines measured in the same run)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup configure build test demo bench fuzz clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >$(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }

configure: setup $(BUILD)/build.ninja

build: configure
	@ninja -C $(BUILD) -j $(JOBS)

test: build
	@scripts/test.sh $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@bench/run-all.sh $(BUILD)

fuzz: setup
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-300} scripts/fuzz.sh

clean:
	rm -rf $(BUILD) $(BUILD).configure.log build-fuzz
