# pfi — the README's two commands and the developer targets.
#
#   make run     install missing Debian packages, build, run the main job
#   make test    install missing Debian packages (incl. test-only ones), build
#                plain + ASan/UBSan + libFuzzer builds and run every test;
#                also compile gcc Release and MinSizeRel builds (tests
#                included) so that every build type stays -Werror clean
#   make bench   build and run the benchmarks (prints their figures)
#   make install PREFIX=/usr/local   binary, library, headers, pkg-config, man pages,
#                systemd units and /etc samples (under PREFIX), docs
#   make deb     Debian packages pfi, pfi-agent, pfi-controller, pfi-slurm in
#                build-deb/packages/ (docs/packaging.md)
#
# Builds live in build/ (plain), build-asan/ (sanitizers), build-fuzz/
# (clang + libFuzzer), build-release/ and build-minsizerel/ (compile only),
# build-core/ (the library alone, GSL + jansson), build-deb/ (make deb:
# prefix /usr, /etc, the multiarch libdir).
# JOBS defaults to the number of CPUs.
#
# Tests and benchmarks are configured only when asked for: `make run` needs
# only the run packages. make test / make bench turn PFI_TESTS on in build/,
# and it stays on there (CMake's cache), so a make run after make test (or
# the reverse) reuses the same build: nothing is reconfigured or rebuilt.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 15

.PHONY: run test bench install deb clean build build-tests build-asan build-fuzz build-release \
        build-minsizerel build-core bootstrap-run bootstrap-test bootstrap-deb test-plain test-asan test-fuzz test-repeat

# the main job: the whole study on the bundled data, report in report/
run: bootstrap-run build
	./build/pfi reproduce --out report

test: bootstrap-test build-tests build-asan build-fuzz build-release build-minsizerel build-core
	@scripts/run-tests.sh build "plain build" ''
	@scripts/run-tests.sh build-core "core+io only (GSL, jansson)" ''
	@scripts/run-tests.sh build-asan "ASan+UBSan build" 'plain'
	@scripts/run-tests.sh build-fuzz "libFuzzer targets" ''

# the three builds' suites without the fresh-root test, for repeated runs
# (e.g. under stress-ng; docs/testing.md)
test-repeat: build-tests build-asan build-fuzz
	@scripts/run-tests.sh build "plain build" 'fresh_root'
	@scripts/run-tests.sh build-asan "ASan+UBSan build" 'plain'
	@scripts/run-tests.sh build-fuzz "libFuzzer targets" ''

bootstrap-run:
	@scripts/bootstrap.sh run

bootstrap-test:
	@scripts/bootstrap.sh test

bootstrap-deb:
	@scripts/bootstrap.sh deb

# PFI_TESTS is not passed here: a build/ that make test configured keeps it on
build:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS) -- --no-print-directory

build-tests:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPFI_TESTS=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS) -- --no-print-directory

build-asan:
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPFI_SANITIZE=ON -DPFI_TESTS=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory

# gcc Release and MinSizeRel warn differently (-Wmaybe-uninitialized,
# -Wformat-truncation): compiled, tests included, so they stay -Werror clean
build-release:
	@cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DPFI_TESTS=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-release -j $(JOBS) -- --no-print-directory

build-minsizerel:
	@cmake -S . -B build-minsizerel -DCMAKE_BUILD_TYPE=MinSizeRel -DPFI_TESTS=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-minsizerel -j $(JOBS) -- --no-print-directory

# the installed library alone (-DPFI_DAEMONS=OFF -DPFI_REPORT=OFF): builds
# and passes its unit tests with GSL and jansson only (docs/architecture.md)
build-core:
	@cmake -S . -B build-core -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPFI_TESTS=ON -DPFI_DAEMONS=OFF -DPFI_REPORT=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-core -j $(JOBS) -- --no-print-directory

build-fuzz:
	@command -v clang >/dev/null || { echo "make: the fuzz build needs clang: install the Debian packages clang and libclang-rt-14-dev (scripts/bootstrap.sh test)" >&2; exit 1; }
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DPFI_FUZZ=ON -DPFI_TESTS=OFF \
	  -DPFI_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) -- --no-print-directory

test-plain: build-tests
	@scripts/run-tests.sh build "plain build" ''

test-asan: build-asan
	@scripts/run-tests.sh build-asan "ASan+UBSan build" 'plain'

test-fuzz: build-fuzz
	@scripts/run-tests.sh build-fuzz "libFuzzer targets" ''

bench: bootstrap-test build-tests
	@scripts/run-bench.sh build

# configured with the prefix, so that the data path compiled into pfi and the
# plugin path in pfi-spank(8) are where the files go (lib/<multiarch> for
# /usr: GNUInstallDirs)
install:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS) -- --no-print-directory
	@cmake --install build

# Debian packages (CPack DEB; dpkg-dev for dpkg-shlibdeps) in build-deb/packages/:
# a build of its own, for /usr, /etc and the multiarch libdir (scripts/make-deb.sh)
deb: bootstrap-deb
	@JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/make-deb.sh build-deb

clean:
	rm -rf build build-asan build-fuzz build-release build-minsizerel build-deb
