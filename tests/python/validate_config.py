"""Validates swarm files against the JSON Schema `mneme schema config`
prints (schemas/swarm.schema.json), as an editor that checks TOML against a
JSON Schema would: the schema must be valid JSON Schema 2020-12, and every
swarm file given must satisfy it.

    validate_config.py SCHEMA SWARM_TOML...

Prints one line per file and exits 0; on a failure prints what is wrong and
exits 1.
"""

from __future__ import annotations

import json
import sys
import tomllib

import jsonschema


def main() -> int:
    schema_path, *files = sys.argv[1:]
    with open(schema_path, encoding="utf-8") as schema_file:
        schema = json.load(schema_file)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failed = False
    for path in files:
        with open(path, "rb") as toml_file:
            config = tomllib.load(toml_file)
        errors = sorted(validator.iter_errors(config), key=lambda error: list(error.path))
        for error in errors:
            failed = True
            where = ".".join(str(part) for part in error.path) or "(the file)"
            print(f"FAILED: {path}: {where}: {error.message}")
        if not errors:
            print(f"{path}: valid")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
