# pfi — the README's two commands and the developer targets.
#
#   make run     install missing Debian packages, build, run the main job
#   make test    install missing Debian packages (incl. test-only ones), build
#                plain + ASan/UBSan + libFuzzer builds, run every test
#   make bench   build and run the benchmarks (prints their figures)
#   make install PREFIX=/usr/local   binary, library, headers, pkg-config, man pages
#
# Builds live in build/ (plain), build-asan/ (sanitizers) and build-fuzz/
# (clang + libFuzzer). JOBS defaults to the number of CPUs.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 15

.PHONY: run test bench install clean build build-asan build-fuzz bootstrap-run bootstrap-test \
        test-plain test-asan test-fuzz

# the main job: the whole study on the bundled data, report in report/
run: bootstrap-run build
	./build/pfi reproduce --out report

test: bootstrap-test build build-asan build-fuzz
	@scripts/run-tests.sh build "plain build" ''
	@scripts/run-tests.sh build-asan "ASan+UBSan build" 'plain'
	@scripts/run-tests.sh build-fuzz "libFuzzer targets" ''

bootstrap-run:
	@scripts/bootstrap.sh run

bootstrap-test:
	@scripts/bootstrap.sh test

build:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS) -- --no-print-directory

build-asan:
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPFI_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory

build-fuzz:
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DPFI_FUZZ=ON -DPFI_TESTS=OFF \
	  -DPFI_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) -- --no-print-directory

test-plain: build
	@scripts/run-tests.sh build "plain build" ''

test-asan: build-asan
	@scripts/run-tests.sh build-asan "ASan+UBSan build" 'plain'

test-fuzz: build-fuzz
	@scripts/run-tests.sh build-fuzz "libFuzzer targets" ''

bench: bootstrap-test build
	@scripts/run-bench.sh build

install: build
	@cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-fuzz
