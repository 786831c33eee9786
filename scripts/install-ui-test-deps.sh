#!/usr/bin/env bash
# Installs what tests/ui.rs drives the web view with:
#
# - Chromium and ChromeDriver from Debian's packages (chromium,
#   chromium-driver: /usr/bin/chromium), when not installed already;
# - playwright-core, pinned in ui/package.json and ui/package-lock.json,
#   into ui/node_modules (`npm ci`: exactly the locked version, checked by
#   its integrity hash; it downloads no browser).
#
# Safe to run again. Prints Chromium's path on stdout (for scripts).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ ! -x /usr/bin/chromium ]]; then
    sudo_if_needed=()
    if [[ "$(id -u)" != 0 ]]; then
        sudo_if_needed=(sudo)
    fi
    "${sudo_if_needed[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo_if_needed[@]}" apt-get install -y -qq chromium chromium-driver >&2
fi
command -v node >/dev/null || { echo "Node.js (node, npm) is needed for the web view's browser test" >&2; exit 1; }
# About a second: always, so the installed version is the locked one.
npm ci --prefix "${repo_root}/ui" --no-audit --no-fund >&2
/usr/bin/chromium --version >&2 2>/dev/null || true
echo /usr/bin/chromium
