# The two commands of the README. Both install what is missing (Debian
# packages, through scripts/install-deps.sh), configure and build.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test bench format clean

all: build

deps:
	scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	scripts/demo.sh $(BUILD)/dplace

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/simulate_benchmark

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD)
