#!/usr/bin/env bash
# Installs what tests/ui.rs drives the web view with:
#
# - Chromium and ChromeDriver from Debian's packages (chromium,
#   chromium-driver: /usr/bin/chromium), when not installed already;
# - the web view's npm packages (scripts/install-ui-deps.sh), among them
#   playwright-core, pinned in ui/package-lock.json.
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
"${repo_root}/scripts/install-ui-deps.sh"
/usr/bin/chromium --version >&2 2>/dev/null || true
echo /usr/bin/chromium
