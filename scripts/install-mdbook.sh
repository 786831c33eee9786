#!/usr/bin/env bash
# Installs mdBook 0.5.4, which builds the book in docs/ (`mdbook build docs`),
# into the repository's own virtualenv folder, <repo>/.venv/mdbook.
#
# It is compiled from the crate `mdbook` with `cargo install --locked` (mdBook's own
# Cargo.lock) and without the default features: `watch` and `serve` are for
# writing the book on a desk, and `search` only adds the search box, so the
# build stays small. Its build directory is target/mdbook-install, apart from
# the project's own build. Safe to run again: an installed 0.5.4 is kept as is.
set -euo pipefail

readonly MDBOOK_VERSION="0.5.4"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${repo_root}/.venv/mdbook"
binary="${root}/bin/mdbook"

if [[ ! -x "${binary}" ]] || [[ "$("${binary}" --version 2>/dev/null)" != "mdbook v${MDBOOK_VERSION}" ]]; then
    CARGO_TARGET_DIR="${repo_root}/target/mdbook-install" \
        cargo install mdbook --locked --version "${MDBOOK_VERSION}" --no-default-features \
        --root "${root}" --quiet
fi

if [[ ! -x "${binary}" ]]; then
    echo "error: ${binary} is missing after cargo install mdbook ${MDBOOK_VERSION}" >&2
    exit 1
fi

# The path alone on stdout, for scripts; the version on stderr, for people.
echo "${binary}"
"${binary}" --version >&2
