#!/usr/bin/env bash
# What the SDKs cost over bare HTTP clients (BENCHMARKS.md, "The SDKs"):
# starts a release `mneme serve` on the embedded log in a temporary home
# (hashed vectors, so that the server's share is small and the clients'
# stands out; no publish quota), then runs clients/typescript/bench/overhead.ts (compiled by
# tsc) and clients/python/bench/overhead.py against it, each printing one
# line of JSON. Arguments go to both (--searches, --batches, --rounds).
#
#     cargo build --release --bin mneme && scripts/bench-sdks.sh
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mneme="${MNEME_BIN:-${repo_root}/target/release/mneme}"
if [[ ! -x "${mneme}" ]]; then
    echo "error: ${mneme} is missing: cargo build --release --bin mneme" >&2
    exit 1
fi
"${repo_root}/scripts/install-typescript-sdk.sh" >/dev/null 2>&1
"${repo_root}/scripts/install-python-clients.sh" >/dev/null 2>&1
node="${repo_root}/.venv/node/bin/node"
python="${repo_root}/.venv/sdk/bin/python"

home="$(mktemp -d)"
port="$("${python}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:${port}"
# The clients are measured, not the publish quota (1,000 events a second a
# caller by default): it is off here.
cat >"${home}/swarm.toml" <<'TOML'
[swarm]
name = "demo"
admit_unknown_agents = true

[http]
publish_events_per_sec = 0
TOML
(cd "${home}" && MNEME_HOME="${home}" MNEME_LOG=warn exec "${mneme}" serve --data-dir "${home}/data" \
    --http "127.0.0.1:${port}" --allow-hashed-vectors) &
server=$!
trap 'kill "${server}" 2>/dev/null; wait "${server}" 2>/dev/null; rm -rf "${home}"' EXIT
"${python}" - "${url}" <<'PY'
import sys, time, httpx
for _ in range(300):
    try:
        if httpx.get(sys.argv[1] + "/healthz", timeout=1).status_code == 200:
            sys.exit(0)
    except httpx.HTTPError:
        pass
    time.sleep(0.1)
sys.exit("mneme serve did not answer /healthz within 30 s")
PY

(cd "${repo_root}/clients/typescript" && "${node}" node_modules/typescript/bin/tsc -p .)
"${node}" "${repo_root}/clients/typescript/dist/bench/overhead.js" --url "${url}" "$@"
PYTHONPATH="${repo_root}/clients/python/src" "${python}" "${repo_root}/clients/python/bench/overhead.py" --url "${url}" "$@"
