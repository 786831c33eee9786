#!/usr/bin/env bash
# The cost of the first start after a purge (issue 35): the erasure pass and
# the rebuild of every memory from the erased log, against a plain restart
# from snapshots on the same data dir. Embedded log, release build.
#
#   tools/bench/erasure-start.sh [EVENTS]      (default 20000)
#
# Prints, for each start, the seconds from launch until every agent's
# memory answers at the log's last seq.
set -euo pipefail

events="${1:-20000}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mneme="${repo_root}/target/release/mneme"
work="$(mktemp -d)"
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "${work}"' EXIT
port=$((20000 + RANDOM % 20000))
url="http://127.0.0.1:${port}"
agents=(planner coder reviewer)
cat >"${work}/swarm.toml" <<EOF
[swarm]
name = "demo"
[[agents]]
name = "planner"
[[agents]]
name = "coder"
[[agents]]
name = "reviewer"
[http]
publish_events_per_sec = 0
[consolidation]
enabled = false
EOF

python3 - "${events}" >"${work}/events.jsonl" <<'EOF'
import json, random, sys
random.seed(7)
words = "token refresh session cache retry budget ledger schema index vault rotate deploy review test flaky race".split()
agents = ["planner", "coder", "reviewer"]
for n in range(int(sys.argv[1])):
    text = " ".join(random.choice(words) for _ in range(12)) + f" note-{n}"
    print(json.dumps({"id": f"01KH{n:022d}", "swarm": "demo", "agent": agents[n % 3],
        "ts": f"2026-02-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z",
        "scope": "shared" if n % 2 else "private", "kind": "message_recorded",
        "data": {"role": "assistant", "text": text}}))
EOF

# Starts the server; sets `took` to the seconds until every memory answers.
start() {
  local began
  began="$(date +%s.%N)"
  "${mneme}" serve --config "${work}/swarm.toml" --data-dir "${work}/data" --http "127.0.0.1:${port}" \
    >>"${work}/serve.log" 2>&1 &
  server=$!
  until curl -sf "${url}/healthz" >/dev/null; do sleep 0.02; done
  local last
  last="$(curl -sf "${url}/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_seq"])')"
  for agent in "${agents[@]}"; do
    curl -sf "${url}/v1/swarms/demo/agents/${agent}/digest?min_seq=${last}" >/dev/null
  done
  took="$(python3 -c "print(f'{$(date +%s.%N) - ${began}:.2f}')")"
}

stop() {
  kill -TERM "${server}"
  wait "${server}" || true
}

start
MNEME_SERVER="${url}" "${mneme}" publish "${work}/events.jsonl" >/dev/null
for agent in "${agents[@]}"; do
  curl -sf "${url}/v1/swarms/demo/agents/${agent}/digest?min_seq=${events}" >/dev/null
done
stop
echo "events: ${events}"
start
echo "restart from snapshots: ${took} s"
# Purge one shared item and one private one.
curl -sf -X POST "${url}/v1/swarms/demo/purge" -H 'Content-Type: application/json' \
  -d '{"item_ids": ["01KH0000000000000000000001", "01KH0000000000000000000003"], "reason": "bench"}' >/dev/null
stop
start
echo "first start after a purge (erase, compact, rebuild): ${took} s"
stop
start
echo "the start after it, from snapshots: ${took} s"
stop
grep -o 'purges carried[^"]*' "${work}/serve.log" | head -1 || true
