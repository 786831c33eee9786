#!/usr/bin/env bash
# Installs what tests/mcp_conformance.rs runs against Mneme's MCP servers,
# into <repo>/.venv/mcp-conformance (inside the repository's own virtualenv,
# which git ignores):
#
# - Node.js 24.19.0 (scripts/install-node.sh): the conformance suite needs
#   Node 22 or later; bin/node here links to it.
# - The npm packages of tests/mcp_conformance/package.json, checked against
#   the integrity hashes of its package-lock.json by that Node's own npm
#   (`npm ci`): @modelcontextprotocol/conformance 0.1.16, the official MCP
#   conformance suite, and supergateway 4.0.0, which bridges `mneme mcp`
#   (stdio) to streamable HTTP for the suite.
#
# Safe to run again: node_modules installed from the very same
# package.json and lockfile is left alone.
#
# Prints the install directory on stdout (for scripts: tests/mcp_conformance.rs
# reads it from MNEME_MCP_CONFORMANCE); the versions on stderr.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
packages="${repo_root}/tests/mcp_conformance"
install_dir="${venv}/mcp-conformance"
stamp="${install_dir}/node_modules/.mneme-packages.sha256"

node="$("${repo_root}/scripts/install-node.sh")"
npm_cli="$(dirname "${node}")/npm-cli.js"

mkdir -p "${install_dir}/bin"
ln -sfn "${node}" "${install_dir}/bin/node"

packages_sum="$(cat "${packages}/package.json" "${packages}/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "${stamp}" || "$(cat "${stamp}")" != "${packages_sum}" ]]; then
    cp "${packages}/package.json" "${packages}/package-lock.json" "${install_dir}/"
    # The wheel's Node first on PATH: npm and any package script run on it.
    (cd "${install_dir}" && PATH="${install_dir}/bin:${PATH}" \
        "${node}" "${npm_cli}" ci --no-audit --no-fund --loglevel=error) >&2
    echo "${packages_sum}" >"${stamp}"
fi

for entry in node_modules/@modelcontextprotocol/conformance/dist/index.js node_modules/supergateway/dist/index.js; do
    if [[ ! -f "${install_dir}/${entry}" ]]; then
        echo "error: ${install_dir}/${entry} is missing after npm ci" >&2
        exit 1
    fi
done

echo "${install_dir}"
echo "node $("${node}" --version)," \
    "@modelcontextprotocol/conformance $("${node}" -p "require('${install_dir}/node_modules/@modelcontextprotocol/conformance/package.json').version")," \
    "supergateway $("${node}" -p "require('${install_dir}/node_modules/supergateway/package.json').version")" >&2
