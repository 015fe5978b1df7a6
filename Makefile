# SPDX-License-Identifier: MIT
# gattd: `make check` is the everyday loop (minutes, no root, no guest), `make test` is
# everything CI runs, `make demo` shows gattd serving a real bluetoothd in a guest.

SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
PYTHON       ?= /usr/bin/python3
PREFIX       ?= /usr
SYSCONFDIR   ?= /etc
DESTDIR      ?=
# The version, from the one place it is written (Sources/ControlAPI/Version.swift).
VERSION      := $(shell sed -n 's/^public let gattdVersion = "\(.*\)"$$/\1/p' Sources/ControlAPI/Version.swift)

DEBUG_BIN    := .build/debug
MAN_DIR      := .build/man
MAN_PAGES    := $(MAN_DIR)/gattd.8 $(MAN_DIR)/gattctl.1 $(MAN_DIR)/gattd.json.5 $(MAN_DIR)/gattd-python.7
RELEASE_BIN  := .build/release

# Release link, for memory (BENCHMARKS.md, "Where the memory goes"): lld lays out the
# functions gattd runs first (build-aux/gattd.order, from `make link-order`), each function
# in its own section so it can, and the private functions, which have no symbol to order by,
# together before them (build-aux/gattd.lds); relative relocations packed (RELR); libstdc++ (the Swift
# runtime's C++) linked statically from a directory that holds only libstdc++.a; and only
# the symbols gattd imports in the dynamic symbol table.
# Nothing here is specific to x86-64: the Swift toolchain ships lld for aarch64 too, RELR
# needs lld >= 15 and glibc >= 2.36 (Debian 12) on both, and the order file holds Swift
# symbol names, which do not depend on the architecture (docs/arm64.md).
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdcxx
RELEASE_FLAGS := -Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld \
	-Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker --symbol-ordering-file=$(CURDIR)/build-aux/gattd.order -Xlinker --no-warn-symbol-ordering \
	-Xlinker --no-export-dynamic -Xlinker -T -Xlinker $(CURDIR)/build-aux/gattd.lds \
	-Xlinker -L$(STATIC_CXX_DIR)

.PHONY: all toolchain deps build man check check-architecture check-man check-lintian check-link-aarch64 release release-build check-order bench test test-unit \
	test-integration test-vm test-powercut vm-prepare \
	check-config check-schema check-deb check-release link-order lint-swift fuzz fuzz-build fuzz-smoke test-asan test-sanitizers chaos \
	demo demo-standin install deb clean

all: build

# A fresh machine: without a Swift 6 toolchain `make` stops here and says what to install
# and from where (scripts/need-swift), before anything is installed or built.
toolchain:
	@SWIFT="$(SWIFT)" scripts/need-swift

deps: toolchain
	scripts/install-deps

build: deps man
	$(SWIFT) build $(SWIFT_FLAGS)

# Man pages gattd(8), gattctl(1), gattd.json(5), gattd-python(7) from man/*.scd (scdoc).
man: $(MAN_PAGES)

$(MAN_DIR)/%: man/%.scd | deps
	@mkdir -p $(MAN_DIR)
	scdoc <$< >$@.tmp && mv $@.tmp $@

# `make release` (and `make deb`, `make install`, which ship it) fail when the order file has
# gone stale; the builds inside `make test` only warn (scripts/check-release), so a wide
# rename does not break CI until someone re-profiles. A stale file costs memory, never
# correctness: the linker ignores names it does not find.
release: release-build check-order

check-order: release-build
	scripts/link-order --check $(RELEASE_BIN)/gattd

release-build: deps
	mkdir -p $(STATIC_CXX_DIR)
	ln -sf "$$(clang -print-file-name=libstdc++.a)" $(STATIC_CXX_DIR)/libstdc++.a
	@# the order file and the linker script are not inputs SwiftPM tracks: relink when they changed
	@if [ build-aux/gattd.order -nt $(RELEASE_BIN)/gattd ] || [ build-aux/gattd.lds -nt $(RELEASE_BIN)/gattd ]; then \
	  rm -f $(RELEASE_BIN)/gattd; fi
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS) $(RELEASE_FLAGS)

# Re-profiles the release binary (valgrind) and rewrites build-aux/gattd.order; commit it.
link-order: release-build
	scripts/link-order --gattd $(CURDIR)/$(RELEASE_BIN)/gattd

# Everything CI runs: unit tests, config examples, the .deb's contents (not installed),
# integration against the stand-in bluetoothd, and the real bluetoothd in a guest.
# The everyday loop: build, lint, unit tests, the shipped definitions and the schema, and the
# stand-in and integration suites. Minutes; no root, no guest, no apt: it needs what
# scripts/install-deps installed once (`make deps`, or the first `make test`).
check: toolchain
	$(SWIFT) build $(SWIFT_FLAGS)
	SWIFT=$(SWIFT) scripts/lint-swift
	scripts/check-architecture
	scripts/check-architecture --self-test
	$(SWIFT) test $(SWIFT_FLAGS)
	@$(MAKE) --no-print-directory check-config
	$(PYTHON) Tests/BLEModelTests/check_schema.py
	@$(MAKE) --no-print-directory test-integration

test: build lint-swift check-architecture test-unit check-config check-schema check-man check-deb check-lintian check-release check-link-aarch64 test-integration test-asan \
	fuzz-smoke test-vm test-powercut test-arm64-package test-arm64-unit test-arm64-integration test-vm-arm64-full \
	check-arm64-locks

# swift-format's rules (.swift-format) over Sources, Tests and Fuzz; layout is not enforced
# (scripts/lint-swift says why).
lint-swift: toolchain
	SWIFT=$(SWIFT) scripts/lint-swift

# docs/architecture.md's module graph is the one the imports draw.
check-architecture:
	scripts/check-architecture
	scripts/check-architecture --self-test

# As root, `swift test` runs everything; otherwise the tests that need root (StateStoreTests'
# full-disk and read-only tmpfs cases, skipped and reported so) run again through sudo.
test-unit:
	$(SWIFT) test $(SWIFT_FLAGS)
	@if [ "$$(id -u)" -ne 0 ]; then \
	  echo "test-unit: running the root-only tests with sudo"; \
	  sudo env GATTD_ROOT_TESTS=1 $(DEBUG_BIN)/gattdPackageTests.xctest --testing-library swift-testing \
	    --filter StateStoreTests; \
	fi

# config/gattd.schema.json accepts the valid fixtures and the examples and refuses the
# structurally invalid fixtures (Debian's python3-jsonschema).
check-schema: deps
	$(PYTHON) Tests/BLEModelTests/check_schema.py

check-config:
	@for f in config/*.json config/examples/*/*.json; do \
	  case $$f in *.schema.json) continue;; esac; \
	  $(DEBUG_BIN)/gattd --check --config $$f >/dev/null || exit 1; \
	  echo "gattd --check $$f: OK"; \
	done

test-integration:
	GATTD_BIN=$(CURDIR)/$(DEBUG_BIN)/gattd $(PYTHON) -m pytest -q Tests/standin Tests/integration

# gattd built with AddressSanitizer into .build-asan, run by the integration suite; any
# report (written to .build-asan/reports) fails the run. Leak checking is off: LeakSanitizer
# cannot see Swift references kept in enum payloads (their spare bits hold the case) and
# reports those objects as leaked; the chaos test bounds memory growth instead.
# Only Tests/integration: Tests/standin checks the stand-in bluetoothd against BlueZ's own
# examples and starts no gattd, so test-integration's run of it is the one that counts.
# swiftc has no UndefinedBehaviorSanitizer for Swift on Linux (`-sanitize=undefined` is
# refused); Swift's own checks (overflow, bounds, unwrapping, exclusivity) are on in debug.
# Two tests measure speed rather than behaviour (notifications paced 40 ms apart under a
# flood; a producer outrunning a bounded queue) and miss their timing with the slower
# instrumented binary on a loaded machine; the plain integration run keeps them.
ASAN_DIR := $(CURDIR)/.build-asan
ASAN_DESELECT := --deselect Tests/integration/test_live_values.py::test_flood_is_paced_latest_value_wins \
	--deselect Tests/integration/test_config_examples.py::test_uart_bridge_resends_what_a_full_queue_refused
test-asan: deps
	$(SWIFT) build --scratch-path $(ASAN_DIR) --sanitize=address $(SWIFT_FLAGS)
	rm -rf $(ASAN_DIR)/reports && mkdir -p $(ASAN_DIR)/reports
	ASAN_OPTIONS=detect_leaks=0:log_path=$(ASAN_DIR)/reports/asan GATTD_BIN=$(ASAN_DIR)/debug/gattd \
	  GATTCTL_BIN=$(ASAN_DIR)/debug/gattctl $(PYTHON) -m pytest -q $(ASAN_DESELECT) Tests/integration
	@if ls $(ASAN_DIR)/reports/asan.* >/dev/null 2>&1; then cat $(ASAN_DIR)/reports/asan.*; exit 1; fi

# Not in `make test` (minutes on 2 cores): the unit tests under AddressSanitizer, and under
# ThreadSanitizer (the loop's cross-thread poster, signal handling, parallel suites).
test-sanitizers: deps
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --scratch-path $(ASAN_DIR) --sanitize=address $(SWIFT_FLAGS)
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --scratch-path $(CURDIR)/.build-tsan --sanitize=thread $(SWIFT_FLAGS)

# The long chaos run (Tests/integration/test_chaos.py): 100 bluetoothd/adapter disruptions
# with reloads, and 300 SIGKILLs of gattd under a write storm. `make test` runs short ones.
CHAOS_CYCLES ?= 100
CRASH_TRIALS ?= 300
chaos: build vm-prepare
	GATTD_CHAOS_CYCLES=$(CHAOS_CYCLES) GATTD_CRASH_TRIALS=$(CRASH_TRIALS) GATTD_CRASH_SECONDS=1800 \
	  GATTD_BIN=$(CURDIR)/$(DEBUG_BIN)/gattd $(PYTHON) -m pytest -q -s Tests/integration/test_chaos.py \
	  Tests/integration/test_state.py -k "chaos or in_flight or crash_under_write_storm"
	Tests/vm/run-powercut --gattd $(CURDIR)/$(DEBUG_BIN)/gattd --trials 12
	Tests/vm/run-powercut --trials 4 --break file-fsync
	Tests/vm/run-powercut --trials 4 --break directory-fsync

check-deb: man
	scripts/check-deb $(DEBUG_BIN)

# Every option gattd --help and gattctl --help list, and every schema key, is in the man pages.
check-man: build
	scripts/check-man $(DEBUG_BIN) $(MAN_DIR)

# lintian on the .deb built from the release binaries: no error or warning tag may appear.
check-lintian: release-build man
	scripts/check-lintian $(RELEASE_BIN)

# The release link's options (function sections, lld, RELR, order file) on aarch64 objects,
# with this toolchain's swiftc, clang and lld: the link is not tied to the build machine.
check-link-aarch64:
	scripts/check-link-aarch64

# The release build's link (order file, static libstdc++, RELR) and a loadgen smoke run.
check-release: release-build
	scripts/check-release $(RELEASE_BIN)

# Release binaries, unit, sysusers, D-Bus policy, /etc/gattd/gattd.json (kept if present),
# schema and README. `make install DESTDIR=/tmp/root PREFIX=/usr/local` stages elsewhere.
install: release man
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" SYSCONFDIR="$(SYSCONFDIR)" scripts/install-files $(RELEASE_BIN)

# gattd_$(VERSION)_<arch>.deb in the repository root (dpkg-deb; see packaging/debian/).
deb: release man
	VERSION="$(VERSION)" scripts/make-deb $(CURDIR) $(RELEASE_BIN)

.PHONY: release-arm64 deb-arm64 check-deb-arm64 check-lintian-arm64 test-arm64-package
# arm64 (docs/arm64.md): the same release build cross-compiled with
# Debian sid's swiftlang 6.2.3 in a root of its own against Debian 12's arm64 libraries
# (scripts/prepare-arm64 fetches them once into the guest's cache; scripts/build-arm64).
# The package is the amd64 one's twin; its completions come from the amd64 gattctl.
ARM64_BIN    := .build-arm64/aarch64-unknown-linux-gnu/release
ARM64_ENV    = DEB_ARCH=arm64 STRIP=aarch64-linux-gnu-strip COMPLETIONS_GATTCTL=$(CURDIR)/$(RELEASE_BIN)/gattctl \
	DEB_SYMBOLS_DIRS="$$(scripts/prepare-arm64)/symbols"
ARM64_RUN    = qemu-aarch64-static -L "$$(scripts/prepare-arm64)/sysroot"

release-arm64: deps
	$(SUDO) env SWIFT=$(SWIFT) PATH="$$PATH" scripts/build-arm64

# gattd_$(VERSION)_arm64.deb in the repository root.
deb-arm64: release-arm64 release man
	$(ARM64_ENV) VERSION="$(VERSION)" scripts/make-deb $(CURDIR) $(ARM64_BIN)

# check-deb and check-lintian on the arm64 package; its binaries run under qemu-user.
check-deb-arm64: release-arm64 release man
	$(ARM64_ENV) RUN_TARGET="$(ARM64_RUN)" ALLOW_UNPACKAGED_LIBRARIES=0 scripts/check-deb $(ARM64_BIN)

check-lintian-arm64: release-arm64 release man
	$(ARM64_ENV) scripts/check-lintian $(ARM64_BIN)

.PHONY: test-arm64 build-arm64-tests test-arm64-unit arm64-wrappers test-arm64-integration test-arm64-install test-vm-arm64 \
	test-vm-arm64-full check-arm64-locks
# The arm64 build tested: its unit tests and the integration suite under
# qemu-user, its package checked (check-deb, lintian) and installed in a Debian 12 arm64 root.
# The cross builds (release and tests) use -warnings-as-errors: a change sid's 6.2.3 refuses
# fails here. test-vm-arm64 (the guest, gattd-full and gattd-security) is not in it.
# In `make test`: all of test-arm64, gattd-full with the arm64 gattd in the guest on 5.66 and
# 5.82 (test-vm-arm64-full), and the lock resolution (check-arm64-locks); a change that breaks
# arm64 behaviour fails `make test`. Only gattd-security's arm64 runs stay in test-vm-arm64.
# The arm64 package's installation, from a signed apt repository, is test-dist's (below).
test-arm64-package: check-deb-arm64 check-lintian-arm64

test-arm64: test-arm64-unit test-arm64-integration test-arm64-package test-arm64-install

ARM64_TEST_BIN := .build-arm64/aarch64-unknown-linux-gnu/debug
ARM64_QEMU_DIR := $(CURDIR)/.build-arm64/qemu

build-arm64-tests: deps
	$(SUDO) env SWIFT=$(SWIFT) PATH="$$PATH" scripts/build-arm64 --tests

# As root (sudo): StateStoreTests' tmpfs cases run too, as in test-unit.
test-arm64-unit: build-arm64-tests
	$(SUDO) scripts/test-arm64-unit $(ARM64_TEST_BIN)

# $(ARM64_QEMU_DIR)/gattd and gattctl: the arm64 release binaries under qemu-aarch64-static with
# Debian 12's arm64 libraries, for GATTD_BIN/GATTCTL_BIN (scripts/arm64-wrappers).
arm64-wrappers: release-arm64
	scripts/arm64-wrappers $(ARM64_BIN) $(ARM64_QEMU_DIR)

# Tests/standin is left to test-integration: it starts no gattd (the stand-in against BlueZ's
# examples), so under qemu-user it would only repeat that run.
# Deselected here, and run natively by test-integration (pytest prints how many it deselected;
# the reasons are at the markers' registration in Tests/integration/conftest.py):
#   timing        measures speed or pacing, or races a 3 s pairing window against gattctl's
#                 start: emulation (about ten times slower) does not keep either (four tests).
#   exec_failure  a program that cannot be executed is refused before it runs; under qemu-user
#                 posix_spawn's failed exec looks like a child that exits 127 (three tests).
#   preload       gattd runs with Tests/integration/fake_l2cap.c (built for the host)
#                 preloaded, which an arm64 gattd under qemu-user cannot load.
test-arm64-integration: arm64-wrappers
	GATTD_BIN=$(ARM64_QEMU_DIR)/gattd GATTCTL_BIN=$(ARM64_QEMU_DIR)/gattctl \
	  $(PYTHON) -m pytest -q -m "not timing and not exec_failure and not preload" Tests/integration

# apt install of the arm64 package from a signed repository (a throwaway key) in a Debian 12
# arm64 root (cached debootstrap, overlay per run); `make test-dist` does both architectures.
test-arm64-install: deb-arm64
	$(SUDO) scripts/test-dist gattd_$(VERSION)_arm64.deb

# The arm64 gattd and gattctl in the amd64 guest under qemu-user (the guest sees the wrappers,
# qemu-aarch64-static and the sysroot through its 9p root) against bluetoothd 5.66 and 5.82.
# The wrappers say they are emulated, so run-suite makes every bound 5 times as long (--slow 5;
# a gattctl call takes 5-7 s there, 0.4 s natively). On a quiet machine gattd-full took
# 114-116 s a version and gattd-security 9-10 minutes, the four about 23 minutes; at
# load 4-6, 3.6-3.9 and 12-13 minutes (Tests/vm/README.md, "arm64").
test-vm-arm64: arm64-wrappers vm-prepare
	Tests/vm/run-suite --gattd $(ARM64_QEMU_DIR)/gattd gattd-full gattd-security

# In `make test`: gattd-full alone, on the two versions the arm64 runs were measured on.
test-vm-arm64-full: arm64-wrappers vm-prepare
	Tests/vm/run-suite --gattd $(ARM64_QEMU_DIR)/gattd --bluez 5.66,5.82 gattd-full

# scripts/prepare-arm64's lock resolution against the archive's real metadata: a lock naming a
# version sid no longer has resolves to the current one, loudly (scripts/test-prepare-arm64).
check-arm64-locks:
	scripts/test-prepare-arm64

# The real bluetoothd 5.66 in a throwaway QEMU guest with two virtual controllers
# (Tests/vm/README.md): installs qemu, busybox-static, bluez and the Debian kernel once.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

vm-prepare:
	$(SUDO) Tests/vm/prepare-host

test-vm: build vm-prepare
	Tests/vm/run-suite --gattd $(CURDIR)/$(DEBUG_BIN)/gattd

# Acknowledged means durable through real power cuts: gattd's state on ext4 on a virtio
# disk in the guest, a write storm from a real central and gattctl set, sysrq b, boot again
# and check (Tests/vm/run-powercut). `make chaos` runs more cuts, and shows the test failing
# with builds that leave out the fsync of the state file or of its directory.
POWERCUT_TRIALS ?= 2
test-powercut: build vm-prepare
	Tests/vm/run-powercut --gattd $(CURDIR)/$(DEBUG_BIN)/gattd --trials $(POWERCUT_TRIALS)

# Shows gattd serving config/example.json, advertising included, to a real central
# through the real bluetoothd, in a guest; prints each step and where the logs are.
demo: build vm-prepare
	Tests/vm/run-guest --main-conf $(CURDIR)/Tests/vm/configs/bluetoothd-main.conf \
	  --env GATTD_BIN=$(CURDIR)/$(DEBUG_BIN)/gattd --env GATTD_CONFIG=$(CURDIR)/config/example.json \
	  --env GATTD_ADVERTISES=1 --env GATTD_CENTRAL_ARGS=--no-long-read Tests/vm/scenarios/gattd-core.sh

# The same exchange against the stand-in bluetoothd on a private bus (no guest, seconds).
demo-standin: build
	scripts/demo-standin config/example.json

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan

# Fuzz targets (Fuzz/README.md): libFuzzer with AddressSanitizer, built into .build-fuzz
# only when asked (GATTD_FUZZ declares them in Package.swift). `make fuzz` runs each for
# FUZZ_SECONDS and prints inputs run and coverage; `make test` runs each for seconds.
FUZZ_TARGETS  := FuzzConfiguration FuzzStateFile FuzzDBusMessage
FUZZ_SECONDS  ?= 60
FUZZ_FLAGS    := --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld

fuzz-build: deps
	@for target in $(FUZZ_TARGETS); do \
	  GATTD_FUZZ=1 $(SWIFT) build $(SWIFT_FLAGS) $(FUZZ_FLAGS) --product $$target || exit 1; \
	done

fuzz: fuzz-build
	scripts/fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	scripts/fuzz --seconds 5 $(FUZZ_TARGETS)

# Benchmarks (not part of `make test`): BENCHMARKS.md explains the table.
bench: release
	bench/run --reps 5 --gattd $(CURDIR)/$(RELEASE_BIN)/gattd --gattd-notify --out BENCHMARKS.run.md
	bench/scale/run --gattd $(CURDIR)/$(RELEASE_BIN)/gattd
	bench/memory --runs 5 --evict -- $(CURDIR)/$(RELEASE_BIN)/gattd --config $(CURDIR)/bench/configs/bench.json

.PHONY: dist dist-key test-dist check-need-swift
# The release (docs/releasing.md): both packages, SHA256SUMS and a signed apt repository in
# $(DIST_DIR)/, signed with the maintainer's key: `make dist DIST_KEY=<fingerprint>`
# (GNUPGHOME=... for a keyring elsewhere). The key is checked before the builds start.
DIST_DIR ?= dist
DIST_KEY ?=
dist: dist-key deb deb-arm64
	DIST_KEY="$(DIST_KEY)" scripts/make-dist $(DIST_DIR) gattd_$(VERSION)_amd64.deb gattd_$(VERSION)_arm64.deb

dist-key:
	@[ -n "$(DIST_KEY)" ] || { echo "make dist: say which key signs the release: make dist DIST_KEY=<fingerprint> (docs/releasing.md)" >&2; exit 1; }
	@gpg --batch --list-secret-keys -- "$(DIST_KEY)" >/dev/null 2>&1 || \
	  { echo "make dist: no secret key \"$(DIST_KEY)\" in gpg's keyring ($${GNUPGHOME:-~/.gnupg}); GNUPGHOME=... names another" >&2; exit 1; }

# In `make test`: the release as a user installs it. scripts/test-dist signs the repository
# with a throwaway key and runs `apt install gattd` from it (a file: source, the key as
# Signed-By) in cached Debian 12 amd64 and arm64 roots (arm64 under qemu-user), then checks
# that apt refuses a changed Release, another key and a changed index (docs/releasing.md).
test-dist: deb deb-arm64
	$(SUDO) scripts/test-dist gattd_$(VERSION)_amd64.deb gattd_$(VERSION)_arm64.deb

# In `make test`: without a Swift toolchain on PATH, `make` says what to install and fails.
check-need-swift:
	scripts/check-need-swift

# Added to the list above (merged prerequisites; kept on a line of their own).
test: check-need-swift test-dist
