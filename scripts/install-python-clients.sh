#!/usr/bin/env bash
# Installs nats-py 2.16.0, the Python NATS client, into the repository's own
# virtualenv, <repo>/.venv (made by scripts/install-nats.sh, or here).
#
# tests/python_client.rs runs tests/python/orchestrator.py with it: an
# orchestrator written from the README alone, publishing straight to
# JetStream and asking Mneme over request/reply, as a Python user would.
# The wheel is pinned by its sha256 (pip's --require-hashes refuses anything
# else); nats-py needs no other package. Safe to run again: pip keeps an
# installed, pinned version as is.
#
# Prints the venv's python on stdout (for scripts); the version on stderr.
set -euo pipefail

readonly NATS_PY_REQUIREMENT="nats-py==2.16.0"
readonly NATS_PY_SHA256="aeb1ff123966c05833d26c7df7e1d54c1c6d32b612428b21677a2e921f1fecae"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
python="${venv}/bin/python"

if [[ ! -x "${python}" ]]; then
    python3 -m venv "${venv}"
fi

work_dir="$(mktemp -d)"
trap 'rm -rf "${work_dir}"' EXIT
echo "${NATS_PY_REQUIREMENT} --hash=sha256:${NATS_PY_SHA256}" >"${work_dir}/requirements.txt"
"${python}" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --requirement "${work_dir}/requirements.txt" >&2

if ! "${python}" -c 'import nats' 2>/dev/null; then
    echo "error: ${python} cannot import nats after installing ${NATS_PY_REQUIREMENT}" >&2
    exit 1
fi

echo "${python}"
echo "nats-py $("${python}" -c 'import importlib.metadata as m; print(m.version("nats-py"))')" >&2
