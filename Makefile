# SPDX-License-Identifier: MIT
# gattd: the two commands a newcomer needs are `make demo` and `make test`.

SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
PYTHON       ?= /usr/bin/python3
PREFIX       ?= /usr
SYSCONFDIR   ?= /etc
DESTDIR      ?=
VERSION      ?= 0.1.0

DEBUG_BIN    := .build/debug
RELEASE_BIN  := .build/release

.PHONY: all deps build release test test-unit test-integration check-config check-deb demo install deb clean

all: build

deps:
	scripts/install-deps

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS)

# Everything CI runs: unit tests, config examples, the .deb's contents (not installed),
# integration against the stand-in bluetoothd.
test: build test-unit check-config check-deb test-integration

test-unit:
	$(SWIFT) test $(SWIFT_FLAGS)

check-config:
	@for f in config/*.json; do \
	  case $$f in *.schema.json) continue;; esac; \
	  $(DEBUG_BIN)/gattd --check --config $$f >/dev/null || exit 1; \
	  echo "gattd --check $$f: OK"; \
	done

test-integration:
	GATTD_BIN=$(CURDIR)/$(DEBUG_BIN)/gattd $(PYTHON) -m pytest -q Tests/standin Tests/integration

check-deb:
	scripts/check-deb $(DEBUG_BIN)

# Release binaries, unit, sysusers, D-Bus policy, /etc/gattd/gattd.json (kept if present),
# schema and README. `make install DESTDIR=/tmp/root PREFIX=/usr/local` stages elsewhere.
install: release
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" SYSCONFDIR="$(SYSCONFDIR)" scripts/install-files $(RELEASE_BIN)

# gattd_$(VERSION)_<arch>.deb in the repository root (dpkg-deb; see packaging/debian/).
deb: release
	VERSION="$(VERSION)" scripts/make-deb $(CURDIR) $(RELEASE_BIN)

# Shows gattd serving config/example.json to a central (stand-in bluetoothd on a private bus).
demo: build
	scripts/demo-standin config/example.json

clean:
	rm -rf .build
