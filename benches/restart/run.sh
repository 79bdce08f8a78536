#!/usr/bin/env bash
# Memory and restart with history (issue 17): fills a data dir with
# completed disbursements (benches/restart/fill.rs), then starts the release
# binary on it and on an empty data dir, in the same run, and compares:
# time from exec to "paygate listening", and resident memory once idle.
#
#   benches/restart/run.sh
#
# Environment (all optional):
#   BENCH_HISTORY=500000   completed disbursements in the filled data dir
#                          (the target is stated for 5,000,000)
#   BENCH_MERCHANTS=100    merchants they are spread over
#   BENCH_IDLE_WAIT=5      seconds after listening before memory is read
#   BENCH_DIR=target/bench-data   parent of the temporary data dirs
#   BENCH_KEEP=1           keep the filled data dir (its path is printed)
#   BENCH_NO_BUILD=1       use the binaries already in target/release
#
# Prints both servers' time to listen and idle RSS, the RSS per historical
# disbursement above the empty server, and PASS/MISS against the targets:
# at most 100 bytes per historical disbursement, listening within 3 s.

set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

history=${BENCH_HISTORY:-500000}
merchants=${BENCH_MERCHANTS:-100}
idle_wait=${BENCH_IDLE_WAIT:-5}
bench_dir=${BENCH_DIR:-target/bench-data}

if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    cargo build --release --bin paygate --example restart_fill
fi

mkdir -p "$bench_dir"
work=$(mktemp -d "$bench_dir/restart.XXXXXX")
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    if [[ -n "${BENCH_KEEP:-}" ]]; then
        echo "kept: $work/full"
        rm -rf "$work/empty"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# Starts paygate on data dir $1; sets listen_ms (exec to the listening line)
# and rss_kib (VmRSS after the idle wait), then stops it.
measure() {
    local data_dir=$1 log="$1.log"
    local started
    started=$(date +%s%N)
    PAYGATE_LOG=warn target/release/paygate serve --data-dir "$data_dir" --listen 127.0.0.1:0 \
        --admin-token restart-bench >"$log" 2>&1 &
    server_pid=$!
    until grep -q "paygate listening on" "$log" 2>/dev/null; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "paygate exited before listening:" >&2
            cat "$log" >&2
            exit 1
        fi
        sleep 0.005
    done
    listen_ms=$((($(date +%s%N) - started) / 1000000))
    sleep "$idle_wait"
    rss_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status")
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

echo "filling a data dir with $history completed disbursements of $merchants merchants" >&2
target/release/examples/restart_fill "$work/full" "$history" "$merchants"
history_bytes=$(du -sb "$work/full" | cut -f1)

measure "$work/empty"
empty_listen_ms=$listen_ms empty_rss_kib=$rss_kib
measure "$work/full"
full_listen_ms=$listen_ms full_rss_kib=$rss_kib

per_disbursement=$(((full_rss_kib - empty_rss_kib) * 1024 / history))
verdict() { if (($1 <= $2)); then echo PASS; else echo MISS; fi; }

printf '\n%-34s %14s %14s\n' "" "empty data dir" "with history"
printf '%-34s %14s %14s\n' "completed disbursements" 0 "$history"
printf '%-34s %14s %14s\n' "data dir on disk (MiB)" "" "$((history_bytes / 1048576))"
printf '%-34s %14s %14s\n' "time to listen (ms)" "$empty_listen_ms" "$full_listen_ms"
printf '%-34s %14s %14s\n' "idle RSS (MiB)" "$((empty_rss_kib / 1024))" "$((full_rss_kib / 1024))"
echo
echo "RSS per historical disbursement above the empty server: $per_disbursement bytes" \
    "(target <= 100): $(verdict "$per_disbursement" 100)"
echo "time to listen with history: $full_listen_ms ms (target <= 3000):" \
    "$(verdict "$full_listen_ms" 3000)"
