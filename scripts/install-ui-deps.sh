#!/usr/bin/env bash
# Installs the web view's libraries, which `mneme` compiles in (see
# build.rs): cytoscape and uPlot, pinned in ui/package.json and checked
# against the integrity hashes of ui/package-lock.json by `npm ci`, into
# ui/node_modules, with the browser test's playwright-core (it downloads no
# browser). Installs Node.js and npm from Debian's packages when missing;
# playwright-core needs Node 20 or later, and a older Node is refused here.
#
# Safe to run again: when ui/node_modules was installed from this very
# lockfile, it is left alone (a fresh `npm ci` would touch every file and
# make cargo rebuild the crate that embeds them).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ui="${repo_root}/ui"
stamp="${ui}/node_modules/.mneme-lockfile.sha256"

if ! command -v npm >/dev/null; then
    sudo_if_needed=()
    if [[ "$(id -u)" != 0 ]]; then
        sudo_if_needed=(sudo)
    fi
    "${sudo_if_needed[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo_if_needed[@]}" apt-get install -y -qq nodejs npm >&2
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if (( node_major < 20 )); then
    echo "error: Node.js $(node --version) is too old for the web view's browser test (playwright-core needs 20 or later)" >&2
    exit 1
fi

lockfile_sum="$(sha256sum "${ui}/package-lock.json" | cut -d' ' -f1)"
if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${lockfile_sum}" ]]; then
    exit 0
fi
npm ci --prefix "${ui}" --no-audit --no-fund >&2
echo "${lockfile_sum}" >"${stamp}"
