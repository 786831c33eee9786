#!/usr/bin/env bash
# Writes schemas/ from the types: the event schema, the API bodies' schema,
# the OpenAPI document and a swarm file's schema, as `mneme schema` prints
# them; the book's configuration reference (docs/src/configuration.md); and
# the SDKs' types generated from them: the Python SDK's models.py
# (datamodel-code-generator, pinned in .venv/sdk, with the options in
# clients/python/pyproject.toml) and the TypeScript SDK's src/schema.ts
# (openapi-typescript, pinned in clients/typescript/package-lock.json, run
# by that package's `generate` script). tests/schemas.rs,
# tests/python_sdk.rs and tests/typescript_sdk.rs fail while the
# checked-in files differ; run this after changing a wire
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
target/debug/mneme schema config >schemas/swarm.schema.json
target/debug/mneme schema config-reference >docs/src/configuration.md
# The generator, pinned, in the SDK's venv.
"${repo_root}/scripts/install-python-clients.sh" >/dev/null
(cd clients/python && "${repo_root}/.venv/sdk/bin/python" -W ignore -m datamodel_code_generator \
    --input ../../schemas/api.schema.json --output src/mneme_client/models.py)
"${repo_root}/scripts/install-typescript-sdk.sh" >/dev/null 2>&1
node_bin="${repo_root}/.venv/node/bin"
(cd clients/typescript && PATH="${node_bin}:${PATH}" "${node_bin}/node" "${node_bin}/npm-cli.js" run --silent generate)
echo "schemas/, docs/src/configuration.md, clients/python/src/mneme_client/models.py" \
    "and clients/typescript/src/schema.ts written" >&2
