# Thin wrapper: CMake is the build. These targets are the README's commands.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all bootstrap bootstrap-test bootstrap-bench configure build demo test test-long test-torch sanitize clang fuzz install deb clean

all: build

# Runtime packages only: make demo needs no browser, node or tmux.
bootstrap:
	@scripts/bootstrap.sh

bootstrap-test:
	@scripts/bootstrap.sh --test

bootstrap-bench:
	@scripts/bootstrap.sh --bench

configure: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

# Test packages first, then the build (never two apt-gets at once under -j).
# The default suite leaves out the `long` set (exhaustive format and GEMM
# checks, minutes each) and the `torch` set (mpx's bf16 emulation against
# PyTorch's CPU bf16, minutes, and python3-torch to install): test-long and
# test-torch run them, and CI runs all three.
test: bootstrap-test
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'long|torch'

test-long: bootstrap-test
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L long

test-torch: bootstrap-bench
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L torch

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: bootstrap-test
	@cmake -S . -B build-asan -DMPX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j $(JOBS) -LE torch

# The build with clang, and its unit, script, fuzz-corpus, API and layer tests.
clang: bootstrap-test
	@CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-clang -j $(JOBS)
	@cd build-clang && ctest --output-on-failure -j $(JOBS) -LE 'long|torch' -R '^(test_|script_|fuzz_corpus_|api_symbols|include_layers)'

# libFuzzer (clang): every harness of tests/fuzz for FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz: bootstrap-test
	@CC=clang cmake -S . -B build-fuzz -DMPX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_onnx fuzz_json fuzz_tensor fuzz_image fuzz_audio fuzz_npz fuzz_cmd
	@JOBS=$(JOBS) scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

# Install (the program, libmpx, headers, mpx.pc, man page, bash completion,
# examples) under PREFIX (default /usr/local); DESTDIR as usual.
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix "$(PREFIX)"

# The Debian packages mpx and libmpx-dev (CPack), into $(BUILD)/.
deb: build
	@cd $(BUILD) && cpack

clean:
	rm -rf $(BUILD) build-asan build-clang build-fuzz
