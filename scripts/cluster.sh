#!/usr/bin/env bash
# A production layout in miniature, on loopback: a three-node NATS
# JetStream cluster (R3 streams) and three Mneme replicas serving the same
# swarms. Real processes, free ports, one state directory.
#
#   scripts/cluster.sh up [SWARM.toml ...]   # default: the repo's swarm.toml
#   scripts/cluster.sh status
#   scripts/cluster.sh down
#
# State (configurations, stores, data dirs, logs, pids) lives in
# $MNEME_CLUSTER_DIR (default: $TMPDIR/mneme-cluster, or /tmp/mneme-cluster);
# `down` stops every process (Mneme first, with SIGTERM, so each writes its
# snapshots and gives its leases up) and removes the directory. The mneme
# binary is $MNEME_BIN, else target/release/mneme (built if missing).
# nats-server comes from scripts/install-nats.sh.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${MNEME_CLUSTER_DIR:-${TMPDIR:-/tmp}/mneme-cluster}"
readonly NODES=3

usage() {
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# N distinct free loopback ports, on one line.
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
sockets = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)
print(" ".join(str(s.getsockname()[1]) for s in sockets))
PY
}

# Waits until the URL answers 200, or fails naming the log to read.
wait_for() {
    local url="$1" what="$2" log="$3" deadline=$((SECONDS + 60))
    until python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "${url}" 2>/dev/null; do
        if ((SECONDS > deadline)); then
            echo "error: ${what} did not answer ${url} within 60 s; see ${log}" >&2
            exit 1
        fi
        sleep 0.2
    done
}

alive() {
    [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

up() {
    if [[ -d "${state}" ]]; then
        echo "error: ${state} exists: a cluster is up (scripts/cluster.sh status), or run scripts/cluster.sh down" >&2
        exit 1
    fi
    local swarm_files=("$@")
    if ((${#swarm_files[@]} == 0)); then
        swarm_files=("${repo_root}/swarm.toml")
    fi
    local nats_server mneme
    nats_server="$("${repo_root}/scripts/install-nats.sh")"
    mneme="${MNEME_BIN:-${repo_root}/target/release/mneme}"
    if [[ ! -x "${mneme}" ]]; then
        (cd "${repo_root}" && scripts/install-ui-deps.sh && cargo build --release --locked --bin mneme)
    fi
    mkdir -p "${state}"
    # shellcheck disable=SC2207
    local ports=($(free_ports $((NODES * 4))))
    local client=("${ports[@]:0:NODES}") route=("${ports[@]:NODES:NODES}")
    local monitor=("${ports[@]:$((2 * NODES)):NODES}") http=("${ports[@]:$((3 * NODES)):NODES}")

    local urls=() i j
    for ((i = 0; i < NODES; i++)); do
        urls+=("nats://127.0.0.1:${client[i]}")
    done
    local nats_urls
    nats_urls="$(IFS=,; echo "${urls[*]}")"

    for ((i = 0; i < NODES; i++)); do
        local dir="${state}/nats-${i}" routes=()
        mkdir -p "${dir}"
        for ((j = 0; j < NODES; j++)); do
            ((j == i)) || routes+=("\"nats-route://127.0.0.1:${route[j]}\"")
        done
        cat >"${dir}/nats.conf" <<EOF
server_name: "nats-${i}"
listen: "127.0.0.1:${client[i]}"
http: "127.0.0.1:${monitor[i]}"
jetstream {
  store_dir: "${dir}/store"
}
cluster {
  name: "mneme-local"
  listen: "127.0.0.1:${route[i]}"
  routes: [$(IFS=,; echo "${routes[*]}")]
}
EOF
        "${nats_server}" -c "${dir}/nats.conf" >>"${dir}/nats.log" 2>&1 &
        echo $! >"${dir}/pid"
    done
    for ((i = 0; i < NODES; i++)); do
        wait_for "http://127.0.0.1:${monitor[i]}/healthz?js-enabled-only=true" "nats-${i}" "${state}/nats-${i}/nats.log"
    done

    # One key behind derived event ids for every replica (docs/src/deployment.md,
    # "Replicas and the writer lease"), kept only in the state directory.
    python3 -c "import secrets; print(secrets.token_hex(32))" >"${state}/id.key"
    chmod 600 "${state}/id.key"
    # Each swarm file as given, with its log on the cluster, R3.
    local configs=()
    for file in "${swarm_files[@]}"; do
        local copy
        copy="${state}/$(basename "${file}")"
        python3 - "${file}" "${copy}" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r'(?m)^backend\s*=.*$', 'backend = "nats"', text)
text = re.sub(r'(?m)^replicas\s*=.*$', 'replicas = 3', text)
if not re.search(r'(?m)^backend\s*=', text):
    text += '\n[log]\nbackend = "nats"\nreplicas = 3\n'
open(sys.argv[2], "w").write(text)
PY
        configs+=(--config "${copy}")
    done

    for ((i = 0; i < NODES; i++)); do
        local dir="${state}/mneme-${i}"
        mkdir -p "${dir}"
        # Started one after the other: the first takes every swarm's writer
        # lease, and creates the R3 streams the others then open.
        MNEME_NODE="mneme-${i}" MNEME_ID_KEY="$(cat "${state}/id.key")" MNEME_LOG="${MNEME_LOG:-info}" \
            "${mneme}" serve "${configs[@]}" --data-dir "${dir}/data" \
            --http "127.0.0.1:${http[i]}" --nats "${nats_urls}" >>"${dir}/mneme.log" 2>&1 &
        echo $! >"${dir}/pid"
        echo "http://127.0.0.1:${http[i]}" >"${dir}/url"
        wait_for "http://127.0.0.1:${http[i]}/healthz" "mneme-${i}" "${dir}/mneme.log"
    done
    echo "${nats_urls}" >"${state}/nats-urls"
    status
}

status() {
    if [[ ! -d "${state}" ]]; then
        echo "no cluster is up (${state} does not exist)"
        return 1
    fi
    echo "state: ${state}"
    echo "nats:  $(cat "${state}/nats-urls" 2>/dev/null || echo '?')"
    local i
    for ((i = 0; i < NODES; i++)); do
        local pidfile="${state}/nats-${i}/pid"
        if alive "${pidfile}"; then
            echo "nats-${i}   up    pid $(cat "${pidfile}")"
        else
            echo "nats-${i}   DOWN"
        fi
    done
    for ((i = 0; i < NODES; i++)); do
        local dir="${state}/mneme-${i}"
        [[ -f "${dir}/url" ]] || continue
        local url
        url="$(cat "${dir}/url")"
        if ! alive "${dir}/pid"; then
            echo "mneme-${i}  DOWN  ${url}  (log: ${dir}/mneme.log)"
            continue
        fi
        # Which swarms' writer leases this replica holds, from /healthz.
        local leases
        leases="$(python3 - "${url}/healthz" <<'PY' 2>/dev/null || echo "not answering"
import json, sys, urllib.request
health = json.load(urllib.request.urlopen(sys.argv[1], timeout=2))
held = [s["swarm"] for s in health["swarms"] if any(l["held_here"] for l in s["leases"])]
print("writer of: " + (", ".join(held) if held else "none (standby)"))
PY
)"
        echo "mneme-${i}  up    ${url}  pid $(cat "${dir}/pid")  ${leases}"
    done
}

# SIGTERM, then waits up to 30 s for the process to end.
stop() {
    local pidfile="$1"
    alive "${pidfile}" || return 0
    local pid
    pid="$(cat "${pidfile}")"
    kill -TERM "${pid}" 2>/dev/null || return 0
    for _ in $(seq 1 300); do
        kill -0 "${pid}" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "warning: pid ${pid} (${pidfile}) did not stop within 30 s of SIGTERM; killed" >&2
    kill -KILL "${pid}" 2>/dev/null || true
}

down() {
    if [[ ! -d "${state}" ]]; then
        echo "no cluster is up (${state} does not exist)"
        return 0
    fi
    local i
    for ((i = 0; i < NODES; i++)); do
        stop "${state}/mneme-${i}/pid"
    done
    for ((i = 0; i < NODES; i++)); do
        stop "${state}/nats-${i}/pid"
    done
    rm -rf "${state}"
    echo "stopped; removed ${state}"
}

case "${1:-}" in
    up) shift; up "$@" ;;
    status) status ;;
    down) down ;;
    *) usage ;;
esac
