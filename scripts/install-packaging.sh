#!/usr/bin/env bash
# Installs cargo-deb, pinned, into <repo>/.venv/cargo (git-ignored), for
# building Mneme's Debian package (`cargo deb`, see [package.metadata.deb]
# in Cargo.toml) and for tests/install.rs. Built from crates.io with its own
# lockfile (--locked); about a minute and a half on 2 cores, once.
#
# Prints the path of the cargo-deb binary on stdout; progress goes to stderr.
set -euo pipefail

readonly CARGO_DEB_VERSION="3.8.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${repo_root}/.venv/cargo"
binary="${root}/bin/cargo-deb"

if [[ -x "${binary}" ]] && "${binary}" --version 2>/dev/null | grep -q " ${CARGO_DEB_VERSION}\b"; then
    echo "${binary}"
    exit 0
fi
command -v cargo >/dev/null || { echo "error: cargo is not installed" >&2; exit 1; }
# Its own target directory, so the project's build is not touched.
CARGO_TARGET_DIR="${root}/build" cargo install --locked --root "${root}" --version "${CARGO_DEB_VERSION}" cargo-deb >&2
rm -rf "${root}/build"
"${binary}" --version >&2
echo "${binary}"
