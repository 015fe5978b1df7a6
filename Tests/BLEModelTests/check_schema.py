#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validates the shipped definitions (config/*.json, config/examples/*/*.json,
examples/*.json) and every Fixtures/valid/*.json against
config/gattd.schema.json (JSON Schema draft 2020-12), and checks that the schema
rejects the invalid fixtures whose problem is structural (unknown keys, types,
ranges, enums). Exit status 0 when all checks pass.

Usage: python3 Tests/BLEModelTests/check_schema.py
"""
import json
import pathlib
import sys

import jsonschema

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Invalid fixtures a schema can catch; the other rules (ids, includes, lengths,
# flag combinations, ...) need gattd's own validation.
SCHEMA_CATCHES = [
    "version-unsupported", "unknown-top-level-key", "unknown-characteristic-key", "adapter-name",
    "missing-uuid", "invalid-uuid", "id-invalid-characters", "id-empty", "max-length-over-512",
    "unknown-flag", "duplicate-flag", "empty-flags", "descriptor-characteristic-flag",
    "update-every-too-short", "uint8-out-of-range", "typed-value-two-keys", "typed-value-unknown-type",
    "advertisement-type-misspelt", "tx-power-out-of-range",
]


def main() -> int:
    schema = json.loads((ROOT / "config" / "gattd.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    shipped = sorted(p for p in (ROOT / "config").glob("*.json") if not p.name.endswith(".schema.json"))
    shipped += sorted((ROOT / "config" / "examples").glob("*/*.json")) + sorted((ROOT / "examples").glob("*.json"))
    valid = shipped + sorted((HERE / "Fixtures" / "valid").glob("*.json"))
    for path in valid:
        errors = list(validator.iter_errors(json.loads(path.read_text())))
        for error in errors:
            print(f"FAIL {path.relative_to(ROOT)}: {error.json_path}: {error.message}")
        failures += bool(errors)
    for name in SCHEMA_CATCHES:
        path = HERE / "Fixtures" / "invalid" / f"{name}.json"
        if validator.is_valid(json.loads(path.read_text())):
            print(f"FAIL {path.relative_to(ROOT)}: accepted by the schema")
            failures += 1
    checked = len(valid) + len(SCHEMA_CATCHES)
    print(f"{checked - failures}/{checked} schema checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
