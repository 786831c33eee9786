#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a bounded time and reports, per
# target, the executions, their rate, the corpus and the findings.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
#
# Works on the stable toolchain: libFuzzer's coverage instrumentation
# (-Cpasses=sancov-module and its -Cllvm-args) is stable; only the
# sanitizers need nightly, so targets build with `--sanitizer none`. A panic
# or abort is a finding; memory errors are caught only as far as Rust's own
# checks and debug assertions (on in cargo-fuzz builds) catch them.
#
# Installs cargo-fuzz 0.13.2 from crates.io first if it is missing. The
# grown corpus goes to fuzz/corpus/<target> and crashes to
# fuzz/artifacts/<target> (both git-ignored); the committed seeds are in
# fuzz/seeds/<target>. Exits non-zero if any target found a crash.
set -euo pipefail

readonly CARGO_FUZZ_VERSION="0.13.2"

seconds_per_target="${1:-20}"
if ! [[ "${seconds_per_target}" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="${repo_root}/fuzz"
cd "${fuzz_dir}"

if ! cargo fuzz --version 2>/dev/null | grep -q "${CARGO_FUZZ_VERSION}"; then
    echo "installing cargo-fuzz ${CARGO_FUZZ_VERSION}" >&2
    cargo install --locked cargo-fuzz --version "${CARGO_FUZZ_VERSION}"
fi

build_started=${SECONDS}
cargo fuzz build --sanitizer none
echo "fuzz targets built in $((SECONDS - build_started)) s"

host_triple="$(rustc -vV | sed -n 's/^host: //p')"
# cargo builds into $CARGO_TARGET_DIR when it is set.
binary_dir="${CARGO_TARGET_DIR:-${fuzz_dir}/target}/${host_triple}/release"
findings_total=0
for target in $(cargo fuzz list); do
    corpus="${fuzz_dir}/corpus/${target}"
    artifacts="${fuzz_dir}/artifacts/${target}"
    log="${artifacts}/last-run.log"
    mkdir -p "${corpus}" "${artifacts}"
    touch "${artifacts}/.run-started"
    # The built binary is run directly: `cargo fuzz run` would check the
    # build again for each target, and its exit code hides libFuzzer's.
    status=0
    run_started=${SECONDS}
    "${binary_dir}/${target}" "${corpus}" "${fuzz_dir}/seeds/${target}" \
        -max_total_time="${seconds_per_target}" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="${artifacts}/" >"${log}" 2>&1 || status=$?
    # A crash ends the run early.
    run_seconds=$((SECONDS - run_started))
    executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}")"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${log}")"
    # libFuzzer's last status line: coverage points, and the inputs of the
    # corpus it keeps (the directory also holds inputs it superseded).
    done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "${log}" | tail -1 || true)"
    coverage="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"${done_line}")"
    corpus_inputs="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"${done_line}")"
    findings="$(find "${artifacts}" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) -newer "${artifacts}/.run-started" | wc -l)"
    if [[ "${status}" -ne 0 && "${findings}" -eq 0 ]]; then
        findings=1
    fi
    echo "fuzz ${target}: ${executions:-0} executions in ${run_seconds} s (${rate:-0} exec/s), coverage ${coverage:-?}, corpus ${corpus_inputs:-?} inputs, findings ${findings}"
    if [[ "${findings}" -ne 0 ]]; then
        echo "  libFuzzer exited with ${status}; see ${log} and the inputs in ${artifacts}/" >&2
        grep -E "panicked at|ERROR: libFuzzer|SUMMARY" "${log}" | head -5 >&2 || true
    fi
    findings_total=$((findings_total + findings))
done

if [[ "${findings_total}" -ne 0 ]]; then
    echo "fuzzing found ${findings_total} crash(es)" >&2
    exit 1
fi
