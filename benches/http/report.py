"""Table of benches/http/run.sh from the RESULT lines of the two wrk runs
(done() of common.lua, extended by run.sh with CPU seconds).

    python3 benches/http/report.py BASELINE.wrk PAYGATE.wrk
"""

import sys

RPS_RATIO_MIN = 0.5
P99_RATIO_MAX = 2.0


def result(path):
    line = next(line for line in open(path) if line.startswith("RESULT "))
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def main():
    baseline, paygate = result(sys.argv[1]), result(sys.argv[2])
    print("| server | requests/s | p50 ms | p99 ms | max ms | 201s | other answers | socket errors "
          "| server CPU (cores) | server CPU us/request | wrk CPU (cores) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in (("axum baseline", baseline), ("paygate", paygate)):
        seconds = float(r["seconds"])
        server_cpu = float(r["server_cpu_s"])
        print(f"| {name} | {float(r['rps']):,.0f} | {float(r['p50_ms']):.2f} | {float(r['p99_ms']):.2f} "
              f"| {float(r['max_ms']):.0f} | {int(r['created']):,} | {r['other']} | {r['socket_errors']} "
              f"| {server_cpu / seconds:.2f} | {1e6 * server_cpu / int(r['requests']):.0f} "
              f"| {float(r['wrk_cpu_s']) / seconds:.2f} |")
    rps_ratio = float(paygate["rps"]) / float(baseline["rps"])
    p99_ratio = float(paygate["p99_ms"]) / float(baseline["p99_ms"])
    print()
    verdict = "PASS" if rps_ratio >= RPS_RATIO_MIN else "MISS"
    print(f"requests/s ratio paygate/baseline: {rps_ratio:.3f} (target >= {RPS_RATIO_MIN}): {verdict}")
    verdict = "PASS" if p99_ratio <= P99_RATIO_MAX else "MISS"
    print(f"p99 ratio paygate/baseline:        {p99_ratio:.2f} (target <= {P99_RATIO_MAX:g}): {verdict}")


if __name__ == "__main__":
    main()
