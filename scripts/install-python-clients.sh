#!/usr/bin/env bash
# Installs the Python clients the tests run into the repository's own
# virtualenv, <repo>/.venv (made by scripts/install-nats.sh, or here):
#
# - nats-py 2.16.0, the Python NATS client: tests/python_client.rs runs
#   tests/python/orchestrator.py with it, an orchestrator written from the
#   README alone, publishing straight to JetStream and asking Mneme over
#   request/reply, as a Python user would. The wheel is pinned by its sha256
#   (pip's --require-hashes refuses anything else); it needs no other package.
# - openapi-spec-validator and jsonschema (tests/python/requirements-validate.txt,
#   pinned versions): tests/schemas.rs validates GET /v1/openapi.json as
#   OpenAPI 3.1, and the JSON examples of the README and the book (docs/src)
#   and examples/trajectory.jsonl against schemas/.
# - mcp 2.3.0, the official Python MCP SDK, with httpx2 and the rest of what
#   it needs (tests/python/requirements-mcp.txt, pinned versions):
#   tests/mcp.rs runs tests/python/mcp_client.py with it, which drives
#   `mneme mcp` over stdio and `/mcp` on `mneme serve` over streamable HTTP
#   as an MCP host would.
# - langchain-mcp-adapters 0.3.2 and langchain-core, LangChain's MCP tools
#   (tests/python/requirements-langchain.txt, pinned versions), in a venv of
#   their own, <repo>/.venv/langchain, since they need mcp < 2:
#   tests/mcp_langchain.rs runs tests/python/langchain_client.py with them.
#
# - The Python SDK's dependencies (tests/python/requirements-sdk.txt, pinned
#   versions: httpx, pydantic, nats-py, langchain-core, LangGraph, pytest,
#   hatchling and datamodel-code-generator), in a venv of their own,
#   <repo>/.venv/sdk: tests/python_sdk.rs builds clients/python as a wheel,
#   installs it there and runs its tests; scripts/schemas.sh generates the
#   SDK's models.py with its datamodel-code-generator.
#
# The two requirement files pin some of the same packages (jsonschema,
# pydantic…) to the same versions; they are installed in one pip run, so a
# disagreement between them fails here rather than one set replacing the
# other.
#
# Safe to run again: pip keeps installed, pinned versions as they are.
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

"${python}" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
    --requirement "${repo_root}/tests/python/requirements-validate.txt" \
    --requirement "${repo_root}/tests/python/requirements-mcp.txt" >&2
"${python}" -m pip check --disable-pip-version-check >&2

if ! "${python}" -c 'import nats, openapi_spec_validator, jsonschema, mcp, httpx2' 2>/dev/null; then
    echo "error: ${python} cannot import nats, openapi_spec_validator, jsonschema, mcp or httpx2" \
        "after installing them" >&2
    exit 1
fi

# A venv of its own under .venv, from one pinned requirements file, checked
# by importing what it must hold: install_venv NAME REQUIREMENTS MODULES.
install_venv() {
    local venv_python="${venv}/$1/bin/python"
    if [[ ! -x "${venv_python}" ]]; then
        python3 -m venv "${venv}/$1"
    fi
    "${venv_python}" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
        --requirement "${repo_root}/tests/python/$2" >&2
    "${venv_python}" -m pip check --disable-pip-version-check >&2
    if ! "${venv_python}" -c "import $3" 2>/dev/null; then
        echo "error: ${venv_python} cannot import $3 after installing tests/python/$2" >&2
        exit 1
    fi
}

install_venv langchain requirements-langchain.txt "langchain_mcp_adapters, langchain_core"
install_venv sdk requirements-sdk.txt \
    "httpx, pydantic, nats, langchain_core, langgraph, pytest, hatchling, datamodel_code_generator, mypy"

echo "${python}"
"${python}" -c 'import importlib.metadata as m
names = ("nats-py", "openapi-spec-validator", "jsonschema", "mcp", "httpx2")
print(*(f"{name} {m.version(name)}" for name in names), sep=", ")' >&2
