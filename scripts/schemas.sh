#!/usr/bin/env bash
# Writes schemas/ from the types: the event schema, the API bodies' schema
# and the OpenAPI document, as `mneme schema` prints them. tests/schemas.rs
# fails while the checked-in files differ; run this after changing a wire
# type or an event payload, and commit the result.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
# The build embeds the web view's libraries (see build.rs).
"${repo_root}/scripts/install-ui-deps.sh"
cargo build --locked --quiet --bin mneme
mkdir -p schemas
target/debug/mneme schema events >schemas/events.schema.json
target/debug/mneme schema api >schemas/api.schema.json
target/debug/mneme schema openapi >schemas/openapi.json
echo "schemas/ written" >&2
