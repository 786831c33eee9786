#!/usr/bin/env bash
# Installs the web view's libraries, which `mneme` compiles in (see
# build.rs): cytoscape and uPlot, pinned in ui/package.json and checked
# against the integrity hashes of ui/package-lock.json by `npm ci`, into
# ui/node_modules, with the browser test's playwright-core (it downloads no
# browser). Installs Node.js and npm from Debian's packages when missing.
#
# Safe to run again; about a second when nothing changed.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v npm >/dev/null; then
    sudo_if_needed=()
    if [[ "$(id -u)" != 0 ]]; then
        sudo_if_needed=(sudo)
    fi
    "${sudo_if_needed[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo_if_needed[@]}" apt-get install -y -qq nodejs npm >&2
fi
# Always, so the installed versions are the locked ones.
npm ci --prefix "${repo_root}/ui" --no-audit --no-fund >&2
