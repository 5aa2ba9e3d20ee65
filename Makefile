# warmroute: `make demo` and `make test` work on a fresh Debian 12 machine. Each installs what is
# missing (scripts/install-deps.sh), configures, builds and runs.
PRESET ?= release
JOBS ?= $(shell nproc)
# Tests in parallel: twice the cores. The integration tests spend most of their time waiting on
# real processes and timers (ctest -j2 kept the 2 cores about half busy), so a second test per
# core shortens `make test` by about a third.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
BIN := build/$(PRESET)/src/cli/warmroute

.PHONY: all deps configure build test unit integration demo bench fuzz clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

# Every test: unit tests (no sockets, manual clock) and integration tests (real processes on
# loopback). CTest runs them with -j so the slow integration tests overlap.
test: build
	@ctest --preset $(PRESET) -j $(TEST_JOBS)

unit: build
	@ctest --preset $(PRESET) -j $(TEST_JOBS) -L unit

integration: build
	@ctest --preset $(PRESET) -L integration

demo: build
	@$(BIN) demo

# Microbenchmarks (Google Benchmark) and the emulator's timing-accuracy benchmark; figures and
# commands are recorded in docs/performance.md.
bench: build
	@cmake --build --preset $(PRESET) -j $(JOBS) --target benches
	@for b in $$(find build/$(PRESET)/src -name '*_bench' -type f -perm -u+x | sort); do \
	  echo "== $$b"; $$b --benchmark_min_time=0.2 || exit 1; done
	@/usr/bin/python3 bench/emulator_accuracy.py --bin $(BIN)

# The libFuzzer targets (tests/fuzz, docs/fuzzing.md) with clang, ASan and UBSan, each for
# FUZZ_SECONDS (ten CPU-minutes by default), then their table: `make fuzz FUZZ_SECONDS=60`.
FUZZ_SECONDS ?= 600
fuzz: deps
	@JOBS=$(JOBS) bench/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf build
