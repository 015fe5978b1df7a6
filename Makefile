# SPDX-License-Identifier: MIT
# gattd: the two commands a newcomer needs are `make demo` and `make test`.

SWIFT        ?= swift
SWIFT_FLAGS  ?= -Xswiftc -warnings-as-errors
PYTHON       ?= /usr/bin/python3
PREFIX       ?= /usr
DESTDIR      ?=

DEBUG_BIN    := .build/debug
RELEASE_BIN  := .build/release

.PHONY: all deps build release test test-unit test-integration check-config demo clean

all: build

deps:
	scripts/install-deps

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_FLAGS)

# Everything CI runs: unit tests, config examples, integration against the stand-in bluetoothd.
test: build test-unit check-config test-integration

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

# Shows gattd serving config/example.json to a central (stand-in bluetoothd on a private bus).
demo: build
	scripts/demo-standin config/example.json

clean:
	rm -rf .build
