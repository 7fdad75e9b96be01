#!/usr/bin/env bash
# Key-value goodput over real Linux networking against the in-process
# network, in one run: the same stream (4 senders, Zipf 1.2 over 20000
# keys) as a served weft_top on TAP netdevs with nftables/htb faults
# (scripts/netns-test.sh --kv-only) and as `weft agg kv` on the seeded
# in-process network model, at 0%, 1% and 5% loss (duplication and
# reordering at the same rate). A benchmark, not a test: it prints figures.
#   scripts/netns-bench.sh [--weft PATH] [--device sim:verilator] [--tuples T]
set -euo pipefail
cd "$(dirname "$0")/.."
weft=${WEFT:-target/release/weft}
device=sim:verilator
tuples=200000
while (($#)); do
    case "$1" in
    --weft) weft=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --tuples) tuples=$2; shift 2 ;;
    *) echo "netns-bench: unknown argument $1" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d /tmp/weft-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$weft" agg gen --zipf 1.2 --keys 20000 --tuples "$tuples" --workers 4 --seed 7 --output "$work/kv.txt"
printf '%-6s %-10s %12s %14s %12s\n' loss path tuples/s tuples/cycle cycles
for p in 0 1 5; do
    bash scripts/netns-test.sh --weft "$weft" --device "$device" --loss "$p" --tuples "$tuples" \
        --kv-only --summary "$work/tap.txt" >"$work/tap.log" 2>&1 || { cat "$work/tap.log"; exit 1; }
    # shellcheck disable=SC1091
    . "$work/tap.txt"
    python3 -c "t=$tuples; s=$seconds; c=$cycles; print(f'{$p:<6} {\"tap\":<10} {t/s:12.0f} {t/c:14.3f} {c:12d}')"
    f=$(python3 -c "print($p/100)")
    t0=$(date +%s.%N)
    "$weft" agg kv --device "$device" --input "$work/kv.txt" --workers 4 --loss "$f" --dup "$f" \
        --reorder "$f" --seed 7 --json >"$work/inproc.json"
    t1=$(date +%s.%N)
    python3 - "$work/inproc.json" "$t0" "$t1" "$p" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["stats"]
s = float(sys.argv[3]) - float(sys.argv[2])
print(f"{sys.argv[4]:<6} {'in-process':<10} {st['tuples']/s:12.0f} {st['tuples_per_cycle']:14.3f} {st['cycles']:12d}")
PY
done
echo "tap: wall time from the first sender's start to the collector's exact sums; cycles: the card's own"
echo "counter (ctrl.CYCLE) from the collector's start to the flush's end, idle turns of the serve loop included."
echo "in-process: the whole command's wall time (the Verilated model's build is cached); cycles: the job's."
