# The two commands of the README. Both install what is missing (Debian
# packages, through scripts/install-deps.sh), configure and build.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test bench format clean test-asan fuzz

all: build

deps:
	scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: $(BUILD)/CMakeCache.txt

# Everything: the dplace command, the tests and the benchmarks.
build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo builds only what it runs: the dplace command.
demo: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target dplace
	scripts/demo.sh $(BUILD)/dplace

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan

# The robustness builds (docs/robustness.md). test-asan: the tests but those
# that link LibTorch, built with AddressSanitizer + UBSan (g++), in its own
# folder; make test runs it. fuzz: each parser fuzzer for FUZZ_SECONDS
# (clang + libFuzzer) at nice 19; crashes in $(FUZZ_BUILD)/crashes/.
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

$(ASAN_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DDPLACE_SANITIZE=ON -DDPLACE_BUILD_BENCHMARKS=OFF

test-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target sanitized_tests
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) \
	  --exclude-regex '_NOT_BUILT$$'

$(FUZZ_BUILD)/CMakeCache.txt:
	scripts/install-deps.sh fuzz
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) \
	  -DCMAKE_BUILD_TYPE=Release -DDPLACE_FUZZ=ON \
	  -DDPLACE_BUILD_TESTS=OFF -DDPLACE_BUILD_BENCHMARKS=OFF

fuzz: $(FUZZ_BUILD)/CMakeCache.txt
	scripts/install-deps.sh fuzz
	nice -n 19 cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	$(BUILD)/simulate_benchmark

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD)
