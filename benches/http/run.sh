#!/usr/bin/env bash
# Durable disbursements (issue 4) or orders (issue 3) over HTTP: wrk
# against the release binary, next to a plain axum JSON endpoint of the same
# shape measured in the same run. The real lifecycle runs meanwhile: the
# sandbox settles each disbursement 2 s after its hand-over (the service's
# default), and every webhook goes to a local receiver that answers 200
# (benches/http/sink.rs), which notes how late each event arrived.
#
#   benches/http/run.sh                        # POST /v1/disbursements
#   BENCH_TARGET=orders benches/http/run.sh    # POST /v1/orders
#   BENCH_TARGET=orders_paid benches/http/run.sh   # each order created, then
#                                              # paid through the sandbox
#
# Environment (all optional):
#   BENCH_TARGET=disbursements  disbursements (disburse.lua), orders or
#                               orders_paid (orders.lua; paid: BENCH_ORDERS_PAY=1)
#   BENCH_CONNECTIONS=64        wrk connections
#   BENCH_THREADS=2             wrk threads (the machine has 2 cores; wrk shares them with the server)
#   BENCH_DURATION=20s          measured wrk run, per server
#   BENCH_WARMUP=5s             wrk warm-up before each measured run
#   BENCH_TIMEOUT=10s           wrk request timeout; wrk leaves slower answers out
#                               of its latency figures (counted as socket errors)
#   BENCH_DISBURSEMENT_DELAY_MS=2000   sandbox vendor delay, the default of
#                               `serve`; 3600000 (an hour) is the creation-only
#                               extra: nothing settles during the run
#   BENCH_NO_WEBHOOKS=1         extra: the merchant has no notify URL, so no
#                               webhook is made (not the headline figure)
#   BENCH_DRAIN_LIMIT=120       seconds to wait after the run for every
#                               disbursement's webhooks to arrive
#   BENCH_STOP_SIGNAL=KILL      how paygate is stopped before the durability check
#   BENCH_DIR=target/bench-data parent of the temporary data dir
#   BENCH_PERF=1                perf record paygate during its measured run
#                               (kept as $BENCH_DIR/http-perf.data)
#   BENCH_NO_BUILD=1            use the binaries already in target/release
#
# Prints a table: requests/s, p50, p99 and CPU for both, the ratios,
# PASS/MISS against the targets (>= 0.5 of the baseline's requests/s, p99
# <= 2x the baseline's), the slow journal steps paygate logged (50 ms or
# more), the webhooks (for disbursements: how long after the run the last
# arrived, and the lag from change to receipt, p99 <= 1 s), then the
# durability check: paygate is killed,
# restarted on the same data dir, and every disbursement or order answered
# 201 must be found again, with the ledger balanced (and, for disbursements,
# the wallet balance equal to funding minus what they debited; orders move
# no money until paid).

set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

connections=${BENCH_CONNECTIONS:-64}
threads=${BENCH_THREADS:-2}
duration=${BENCH_DURATION:-20s}
warmup=${BENCH_WARMUP:-5s}
timeout=${BENCH_TIMEOUT:-10s}
delay_ms=${BENCH_DISBURSEMENT_DELAY_MS:-2000}
drain_limit=${BENCH_DRAIN_LIMIT:-120}
stop_signal=${BENCH_STOP_SIGNAL:-KILL}
bench_dir=${BENCH_DIR:-target/bench-data}
admin_token=bench-admin-token
target=${BENCH_TARGET:-disbursements}
case "$target" in
disbursements) script=benches/http/disburse.lua resource=disbursements ;;
orders) script=benches/http/orders.lua resource=orders ;;
orders_paid)
    script=benches/http/orders.lua resource=orders
    export BENCH_ORDERS_PAY=1
    ;;
*)
    echo "BENCH_TARGET must be disbursements, orders or orders_paid, not '$target'" >&2
    exit 2
    ;;
esac
amount_minor=1000000           # IDR 10,000 a disbursement
order_amount_minor=2500000     # IDR 25,000 an order
export BENCH_ORDER_AMOUNT_MINOR=$order_amount_minor
funding_minor=1000000000000000 # IDR 10 trillion of test money: far more than a run spends

if ! command -v wrk >/dev/null; then
    echo "installing wrk" >&2
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi

if [[ -z "${BENCH_NO_BUILD:-}" ]]; then
    cargo build --release --bin paygate --example http_baseline --example webhook_sink
fi

mkdir -p "$bench_dir"
work=$(mktemp -d "$bench_dir/http.XXXXXX")
data_dir="$work/data"
server_pid=""

stop_server() {
    local signal=$1
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "-$signal" "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
sink_pid=""
trap 'stop_server KILL; [[ -n "$sink_pid" ]] && kill "$sink_pid" 2>/dev/null; rm -rf "$work"' EXIT

# start_server LOG COMMAND...: runs it in the background and sets $server_pid
# and $address from its "listening on http://ADDR" line.
start_server() {
    local log=$1
    shift
    "$@" >"$log" 2>"$log.stderr" &
    server_pid=$!
    for _ in $(seq 1 600); do
        address=$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' "$log" | head -n1)
        [[ -n "$address" ]] && return 0
        kill -0 "$server_pid" 2>/dev/null || { cat "$log.stderr" >&2; echo "server exited" >&2; exit 1; }
        sleep 0.1
    done
    echo "server did not print its address" >&2
    exit 1
}

# cpu_ticks PID: user + system clock ticks the process has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# created_in FILE: the 201s counted in a wrk output's RESULT line.
created_in() { sed -n 's/^RESULT .* created=\([0-9]*\) .*/\1/p' "$1"; }
# paid_in FILE: the 200s (orders paid) counted in a wrk output's RESULT line.
paid_in() { sed -n 's/^RESULT .* other=\([^ ]*\).*/\1/p' "$1" | tr ',' '\n' | sed -n 's/^200://p' | grep . || echo 0; }

# load NAME NONCE: warm-up, then the measured run. Leaves the measured
# output in $work/NAME.wrk, its RESULT line extended with the CPU seconds
# of the server and of wrk, and adds every 201 seen to $created_total.
created_total=0 paid_total=0
load() {
    local name=$1 nonce=$2
    local wrk=(wrk -t"$threads" -c"$connections" --timeout "$timeout" -s "$script")
    BENCH_NONCE="$nonce-warmup" "${wrk[@]}" -d"$warmup" "http://$address" >"$work/$name.warmup.wrk"
    local perf_pid=""
    if [[ -n "${BENCH_PERF:-}" && "$name" == paygate ]]; then
        perf record -F 499 --call-graph dwarf,16384 -o "$work/perf.data" -p "$server_pid" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    local ticks_before ticks_after TIMEFORMAT="%U %S"
    ticks_before=$(cpu_ticks "$server_pid")
    { time BENCH_NONCE="$nonce" "${wrk[@]}" -d"$duration" --latency "http://$address" >"$work/$name.wrk"; } \
        2>"$work/$name.wrk-cpu"
    ticks_after=$(cpu_ticks "$server_pid")
    if [[ -n "$perf_pid" ]]; then
        kill -INT "$perf_pid"
        wait "$perf_pid" 2>/dev/null || true
        cp "$work/perf.data" "$bench_dir/http-perf.data"
        echo "perf data: $bench_dir/http-perf.data (perf report -i $bench_dir/http-perf.data)" >&2
    fi
    local server_cpu wrk_cpu
    server_cpu=$(awk -v t=$((ticks_after - ticks_before)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}')
    wrk_cpu=$(awk '{printf "%.2f", $1 + $2}' "$work/$name.wrk-cpu")
    sed -i "s/^RESULT .*/& server_cpu_s=$server_cpu wrk_cpu_s=$wrk_cpu/" "$work/$name.wrk"
    created_total=$((created_total + $(created_in "$work/$name.warmup.wrk") + $(created_in "$work/$name.wrk")))
    paid_total=$((paid_total + $(paid_in "$work/$name.warmup.wrk") + $(paid_in "$work/$name.wrk")))
    echo "== $name: wrk -t$threads -c$connections -d$duration --timeout $timeout (after a $warmup warm-up)"
    grep -v '^RESULT' "$work/$name.wrk"
    echo "CPU during the measured run: server ${server_cpu}s, wrk ${wrk_cpu}s"
    local rss_kb
    rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status")
    echo "resident memory after the run: $((rss_kb / 1024)) MiB, after $created_total answers of 201 from this server"
}

json() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# 1. The baseline: plain axum, nothing stored.
start_server "$work/baseline.out" target/release/examples/http_baseline 127.0.0.1:0
load baseline "baseline-$$"
stop_server TERM
created_total=0 paid_total=0 # the baseline stores nothing; only paygate's answers are checked

# 2. paygate on a fresh data dir: one WALLET merchant, limits out of the way
#    (funded for disbursements; orders need no money), its webhooks going to
#    the local receiver.
notify_field=""
if [[ -z "${BENCH_NO_WEBHOOKS:-}" ]]; then
    start_server "$work/sink.out" target/release/examples/webhook_sink 127.0.0.1:0
    sink_pid=$server_pid sink_address=$address server_pid=""
    notify_field="\"default_notify_url\": \"http://$sink_address/hook\","
fi
serve=(target/release/paygate serve --listen 127.0.0.1:0 --data-dir "$data_dir" --admin-token "$admin_token"
    --sandbox-disbursement-delay-ms "$delay_ms")
start_server "$work/paygate.out" "${serve[@]}"
admin=(-sS -H "Authorization: Bearer $admin_token" -H "Content-Type: application/json")
merchant=$(curl "${admin[@]}" "http://$address/admin/v1/merchants" -d '{
    "name": "HTTP bench", "settlement_type": "WALLET", '"$notify_field"'
    "limits": {"daily_minor": 1000000000000000000, "rate_limit_per_second": 1000000, "rate_limit_burst": 1000000}}')
merchant_id=$(json 'd["data"]["merchant"]["id"]' <<<"$merchant")
api_key=$(json 'd["data"]["credentials"]["api_key"]' <<<"$merchant")
if [[ "$target" == disbursements ]]; then
    curl "${admin[@]}" "http://$address/admin/v1/merchants/$merchant_id/wallet/credit" \
        -d "{\"amount_minor\": $funding_minor, \"reason\": \"bench\"}" >/dev/null
fi
mkdir -p "$work/ids"
export PAYGATE_API_KEY=$api_key BENCH_AMOUNT_MINOR=$amount_minor BENCH_IDS_DIR=$work/ids
load paygate "paygate-$$"

# Webhooks: every disbursement makes two events (ON_PROCESS, SUCCESS), every
# paid order one (order.paid); wait until all have arrived, or the limit.
sink_stats() { curl -sS "http://$sink_address/stats"; }
webhooks_expected=0 drain_seconds="" sink_json="{}"
case "$target" in
disbursements) webhooks_expected=$((2 * created_total)) webhooks_each="2 a disbursement" ;;
orders_paid) webhooks_expected=$paid_total webhooks_each="1 a paid order" ;;
*) webhooks_expected=0 ;;
esac
if [[ -n "$sink_pid" ]] && ((webhooks_expected > 0)); then
    at_end=$(sink_stats | json 'd["received"]')
    run_ended=$(date +%s.%N)
    while :; do
        sink_json=$(sink_stats)
        received=$(json 'd["received"]' <<<"$sink_json")
        waited=$(awk -v a="$run_ended" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
        if ((received >= webhooks_expected)); then
            drain_seconds=$waited
            break
        fi
        if awk -v w="$waited" -v l="$drain_limit" 'BEGIN {exit !(w >= l)}'; then break; fi
        sleep 0.2
    done
fi
stop_server "$stop_signal"

# 3. Durability: restart on the same data dir; every 201 must be there.
restart_started=$(date +%s.%N)
start_server "$work/paygate2.out" "${serve[@]}"
restart_seconds=$(awk -v a="$restart_started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
v1=(-sS -H "X-API-Key: $api_key")
total=$(curl "${v1[@]}" "http://$address/v1/$resource?limit=1" | json 'd["meta"]["total"]')
if [[ "$target" == orders_paid ]]; then
    paid_after=$(curl "${v1[@]}" "http://$address/v1/orders?status=PAID&limit=1" | json 'd["meta"]["total"]')
    balance=$(curl "${v1[@]}" "http://$address/v1/balance" | json 'd["data"]["balance_minor"]')
fi
if [[ "$target" == disbursements ]]; then
    fee=$(curl "${v1[@]}" "http://$address/v1/disbursements?limit=1" | json 'd["data"][0]["fee_minor"]')
    balance=$(curl "${v1[@]}" "http://$address/v1/balance" | json 'd["data"]["balance_minor"]')
fi
balanced=$(curl -sS -H "Authorization: Bearer $admin_token" "http://$address/admin/v1/ledger/verify" |
    json 'd["data"]["balanced"]')
read -r ids_checked ids_missing < <(python3 benches/http/check_ids.py --path "/v1/$resource/{}" \
    "$address" "$api_key" "$work"/ids/*.txt)
stop_server TERM

echo
echo "$target: POST /v1/$resource ($script); wrk -t$threads -c$connections -d$duration --timeout $timeout;" \
    "$(nproc) cores, shared by wrk and the server"
python3 benches/http/report.py "$work/baseline.wrk" "$work/paygate.wrk"
# The server warns of any journal write, sync or apply of 50 ms or more
# (each holds up every reply): the likely cause of a high p99 or max.
slow_lines=$(cat "$work/paygate.out.stderr" "$work/paygate.out" 2>/dev/null | grep "slow" || true)
echo "slow journal steps logged by paygate (start, warm-up and run): $(grep -c . <<<"$slow_lines" || true)"
if [[ -n "$slow_lines" ]]; then head -n 5 <<<"$slow_lines" | sed 's/^/  /'; fi

if [[ -n "$sink_pid" ]] && ((webhooks_expected > 0)); then
    received=$(json 'd["received"]' <<<"$sink_json")
    lag_p99=$(json 'd["lag_p99_ms"]' <<<"$sink_json")
    echo
    echo "webhooks to a local receiver answering 200 (sandbox settles disbursements ${delay_ms} ms after hand-over):"
    echo "  expected ($webhooks_each): $webhooks_expected; received by the end of the run: $at_end;" \
        "in all: $received"
    if [[ -n "$drain_seconds" ]]; then
        echo "  the last arrived ${drain_seconds}s after the run ended"
    else
        echo "  still missing ${drain_limit}s after the run: $((webhooks_expected - received)) (backlog: MISS)"
    fi
    echo "  lag from change to receipt: p50 $(json 'd["lag_p50_ms"]' <<<"$sink_json") ms," \
        "p99 $lag_p99 ms, max $(json 'd["lag_max_ms"]' <<<"$sink_json") ms" \
        "(target p99 <= 1000 ms): $( ((lag_p99 <= 1000)) && [[ -n "$drain_seconds" ]] && echo PASS || echo MISS)"
fi

balance_ok=1
echo
echo "durability (paygate stopped with SIG$stop_signal, restarted on the same data dir):"
echo "  201s seen by wrk (warm-up + run): $created_total; $resource after restart: $total"
echo "  restart (journal replay, indexes rebuilt) until listening: ${restart_seconds}s"
echo "  ids answered 201 looked up after restart: $ids_checked, not found: $ids_missing"
if [[ "$target" == orders_paid ]]; then
    # WALLET: each paid order credits its amount less the 0.7% MDR (half up).
    net=$((order_amount_minor - (order_amount_minor * 70 + 5000) / 10000))
    expected_balance=$((paid_after * net))
    echo "  orders paid (200s seen by wrk): $paid_total; PAID after restart: $paid_after"
    echo "  balance after restart: $balance ($paid_after x $net = $expected_balance)"
    ((balance == expected_balance && paid_after >= paid_total)) || balance_ok=0
fi
if [[ "$target" == disbursements ]]; then
    expected_balance=$((funding_minor - total * (amount_minor + fee)))
    echo "  balance after restart: $balance (funding - $total x $((amount_minor + fee)) = $expected_balance)"
    ((balance == expected_balance)) || balance_ok=0
fi
echo "  ledger verify balanced: $balanced"
if ((total >= created_total && ids_checked == created_total && ids_missing == 0 && balance_ok)) &&
    [[ "$balanced" == True ]]; then
    echo "  durable: PASS"
else
    echo "  durable: FAIL"
    exit 1
fi
