#!/usr/bin/env bash
# Installs what the TypeScript SDK (clients/typescript) is built and tested
# with: Node 24 (scripts/install-node.sh, into .venv/node) and the SDK's npm
# devDependencies into clients/typescript/node_modules (git ignores it),
# checked against the integrity hashes of its package-lock.json by that
# Node's own npm (`npm ci`): typescript 5.9.3, openapi-typescript 7.13.0
# (which generates src/schema.ts from schemas/openapi.json), @types/node,
# prettier 3.10.2 (the code's format), ajv 8.20.0, with which the tests
# check the server's answers against the OpenAPI document, and ai 7.0.185
# with zod 4.6.7, which the AI SDK recorder's tests drive with the AI SDK's
# mock model. The SDK itself has no runtime dependencies (`ai` is an
# optional peer of `mneme-client/ai`).
#
# Safe to run again: node_modules installed from the very same package.json
# and lockfile is left alone. Prints the SDK's directory on stdout.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdk="${repo_root}/clients/typescript"
stamp="${sdk}/node_modules/.mneme-packages.sha256"

node="$("${repo_root}/scripts/install-node.sh")"
npm_cli="$(dirname "${node}")/npm-cli.js"

packages_sum="$(cat "${sdk}/package.json" "${sdk}/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "${stamp}" || "$(cat "${stamp}")" != "${packages_sum}" ]]; then
    # The venv's Node first on PATH: npm and any package script run on it.
    (cd "${sdk}" && PATH="$(dirname "${node}"):${PATH}" \
        "${node}" "${npm_cli}" ci --no-audit --no-fund --loglevel=error) >&2
    echo "${packages_sum}" >"${stamp}"
fi

for entry in typescript/bin/tsc openapi-typescript/bin/cli.js prettier/bin/prettier.cjs ajv/dist/2020.js ai/package.json; do
    if [[ ! -f "${sdk}/node_modules/${entry}" ]]; then
        echo "error: ${sdk}/node_modules/${entry} is missing after npm ci" >&2
        exit 1
    fi
done

echo "${sdk}"
echo "typescript $("${node}" -p "require('${sdk}/node_modules/typescript/package.json').version")," \
    "openapi-typescript $("${node}" -p "require('${sdk}/node_modules/openapi-typescript/package.json').version")" >&2
