#!/usr/bin/env bash
# weft over real Linux networking, on this machine only.
#
# Network namespaces joined by veth pairs and a bridge:
#
#   ws0..wsN-1 (senders, 10.0.0.11..)  --veth--+
#                                               br0 --- tap wwire [weft card serve] tap whost --- wh (the card's host, 10.0.0.1)
#                                         (in wc, the card's namespace)
#
# `weft card serve` runs the simulated weft_top in namespace wc behind two
# TAP netdevs: its wire port on the bridge, its host port moved into the
# host's namespace (the netdev `onic` would give a real card's host). The
# collector (`weft kv collect`, and the gradient fallback beside it) runs
# in wh and reaches the card's registers through the control socket; the
# senders (`weft kv send`) and gradient workers (`weft grad worker`) run in
# their own namespaces and know only the card's address.
#
# Faults are injected on the senders' links with the kernel's own tools,
# probed first (this machine's kernel has no netem):
#   loss      nftables `numgen random mod 100 < P drop` on the receiving side:
#             data frames in the bridge's forward hook, acks in each
#             sender's prerouting hook;
#   dup       nftables `dup to 10.0.0.2 device D` on each sender's output;
#   reorder   nftables `meta priority set 1:2` on each sender's output
#   + delay   picks P% of its data frames into a slow htb class, which holds
#             them behind its rate while the rest pass (a second, shaped
#             path: the packets it holds arrive late and out of order).
#
# Every address is inside the namespaces this script makes; everything is
# torn down on exit, failure or not. Usage:
#   scripts/netns-test.sh [--weft PATH] [--device sim:verilator] [--loss P]
#                         [--senders N] [--tuples T] [--keep-logs DIR]
#                         [--kv-only] [--summary FILE]
# --summary writes the key-value job's figures (tuples, wall seconds, the
# card's cycles from the collector's start to the flush's end, by its own
# cycle counter) as `key=value` lines, for
# scripts/netns-bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

weft=${WEFT:-target/debug/weft}
device=sim:verilator
loss=2        # percent, for loss, duplication and reordering alike
senders=4
tuples=40000
logs=""
kv_only=0
summary=""
while (($#)); do
    case "$1" in
    --weft) weft=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --senders) senders=$2; shift 2 ;;
    --tuples) tuples=$2; shift 2 ;;
    --keep-logs) logs=$2; shift 2 ;;
    --kv-only) kv_only=1; shift ;;
    --summary) summary=$(realpath -m "$2"); shift 2 ;;
    *) echo "netns-test: unknown argument $1" >&2; exit 2 ;;
    esac
done
weft=$(realpath "$weft")
say() { echo "netns-test: $*"; }
[ -x "$weft" ] || { say "no weft binary at $weft (cargo build -p weft)"; exit 1; }
[ "$(id -u)" = 0 ] || { say "needs root (network namespaces)"; exit 1; }
if ! command -v nft >/dev/null; then
    say "installing nftables"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq nftables >/dev/null
fi

tag="wt$$"
work=$(mktemp -d /tmp/weft-netns.XXXXXX)
[ -n "$logs" ] || logs=$work
mkdir -p "$logs"
ns_card="${tag}c"
ns_host="${tag}h"
sender_ns() { echo "${tag}s$1"; }
pids=()
cleanup() {
    local rc=$?
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    for ns in $(ip netns list | awk '{print $1}' | grep "^${tag}" || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
    if [ "$rc" != 0 ]; then
        say "FAILED (status $rc); logs:"
        for f in "$logs"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
    fi
    [ "$logs" = "$work" ] && rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT INT TERM

# (Background processes are started with `ip netns exec` itself, not this
# function, so that $! is the process that gets the signals.)
inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
# Wait until LOG shows PATTERN, failing if process PID (NAME) exits first.
wait_ready() {
    local log=$1 pattern=$2 pid=$3 name=$4
    for _ in $(seq 1 600); do
        grep -q "$pattern" "$log" && return 0
        kill -0 "$pid" 2>/dev/null || { say "$name exited"; cat "$log"; exit 1; }
        sleep 0.1
    done
    say "$name did not get ready"
    exit 1
}
quiet_ns() {
    inns "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    inns "$1" ip link set lo up
}

card_ip=10.0.0.2
card_mac=02:57:46:00:00:01
host_ip=10.0.0.1
host_mac=02:57:46:ff:00:01

# --- namespaces, bridge, veths ----------------------------------------------
ip netns add "$ns_card"
ip netns add "$ns_host"
quiet_ns "$ns_card"
quiet_ns "$ns_host"
inns "$ns_card" ip link add br0 type bridge
inns "$ns_card" ip link set br0 up
for ((i = 0; i < senders; i++)); do
    ns=$(sender_ns $i)
    ip netns add "$ns"
    quiet_ns "$ns"
    ip link add "vs$i" netns "$ns" type veth peer name "vb$i" netns "$ns_card"
    inns "$ns_card" ip link set "vb$i" master br0 up
    inns "$ns" ip link set "vs$i" address "02:57:46:01:00:$(printf %02x $i)" up
    inns "$ns" ip addr add "10.0.0.$((11 + i))/24" dev "vs$i"
    # The card answers no ARP (ARP for its address passes through it to its
    # host, which has another address): peers get a neighbour entry, as
    # they would for a weft card on a real network.
    inns "$ns" ip neigh replace "$card_ip" lladdr "$card_mac" dev "vs$i" nud permanent
done

# --- the card ------------------------------------------------------------------
sock="$work/card.sock"
ip netns exec "$ns_card" "$weft" card serve --device "$device" --wire tap:wwire --host tap:whost \
    --control "unix:$sock" >"$logs/card.log" 2>&1 &
pids+=($!)
card_pid=$!
for _ in $(seq 1 1200); do
    [ -S "$sock" ] && inns "$ns_card" ip link show whost >/dev/null 2>&1 && break
    kill -0 "$card_pid" 2>/dev/null || { say "card serve exited"; cat "$logs/card.log"; exit 1; }
    sleep 0.1
done
[ -S "$sock" ] || { say "card serve did not come up"; exit 1; }
inns "$ns_card" ip link set wwire master br0 up
inns "$ns_card" ip link set whost netns "$ns_host"
inns "$ns_host" ip link set whost address "$host_mac" up
inns "$ns_host" ip addr add "$host_ip/24" dev whost
inns "$ns_host" ip neigh replace "$card_ip" lladdr "$card_mac" dev whost nud permanent
say "card up: $(head -n 1 "$logs/card.log")"

# --- faults ----------------------------------------------------------------
used=()
if inns "$ns_card" nft add table bridge weft 2>/dev/null &&
    inns "$ns_card" nft add chain bridge weft fw '{ type filter hook forward priority 0; }' &&
    inns "$ns_card" nft add rule bridge weft fw iifname '"vb*"' ip daddr "$card_ip" udp dport '{ 22342, 22343 }' numgen random mod 100 '<' "$loss" counter drop; then
    used+=("loss: nft bridge forward drop ${loss}% of data")
fi
for ((i = 0; i < senders; i++)); do
    ns=$(sender_ns $i)
    inns "$ns" nft add table ip weft
    inns "$ns" nft add chain ip weft pre '{ type filter hook prerouting priority 0; }'
    # Key-value acks and gradient RESULT copies alike.
    inns "$ns" nft add rule ip weft pre ip saddr "$card_ip" numgen random mod 100 '<' "$loss" counter drop
    inns "$ns" nft add chain ip weft out '{ type filter hook output priority 0; }'
    if inns "$ns" nft add rule ip weft out ip daddr "$card_ip" numgen random mod 100 '<' "$loss" counter dup to "$card_ip" device "vs$i" 2>/dev/null; then
        dup=1
    else
        dup=0
    fi
    if inns "$ns" tc qdisc add dev "vs$i" root handle 1: htb default 1 r2q 1000 2>/dev/null &&
        inns "$ns" tc class add dev "vs$i" parent 1: classid 1:1 htb rate 10gbit 2>/dev/null &&
        inns "$ns" tc class add dev "vs$i" parent 1: classid 1:2 htb rate 4mbit ceil 4mbit 2>/dev/null &&
        inns "$ns" nft add rule ip weft out ip daddr "$card_ip" numgen random mod 100 '<' "$loss" counter meta priority set 1:2; then
        reorder=1
    else
        reorder=0
    fi
done
used+=("ack and RESULT loss: nft prerouting drop ${loss}% in each sender")
((dup)) && used+=("dup: nft output dup ${loss}%") || say "no nft dup here: duplication not injected"
((reorder)) && used+=("reorder+delay: ${loss}% through a 4 Mbit/s htb class") || say "no htb here: reordering not injected"
say "faults: $(IFS=';'; echo "${used[*]}")"

# --- a key-value job --------------------------------------------------------------
spec="zipf:1.2:20000:$tuples"
"$weft" agg gen --zipf 1.2 --keys 20000 --tuples "$tuples" --workers "$senders" --seed 7 --output "$work/kv.txt"
ip netns exec "$ns_host" "$weft" kv collect --device "unix:$sock" --job 5 --senders "$senders" \
    --listen "$host_ip:7000" --check "$work/kv.txt" --output "$work/sums.txt" --timeout 120 \
    >"$logs/collect.log" 2>&1 &
collect_pid=$!
pids+=($collect_pid)
wait_ready "$logs/collect.log" "collector ready" "$collect_pid" collector
t0=$(date +%s.%N)
send_pids=()
for ((i = 0; i < senders; i++)); do
    ip netns exec "$(sender_ns $i)" "$weft" kv send --card "$card_ip" --collector "$host_ip:7000" --job 5 \
        --id "$i" --input "$work/kv.txt" --timeout 120 >"$logs/send$i.log" 2>&1 &
    send_pids+=($!)
    pids+=($!)
done
for p in "${send_pids[@]}"; do wait "$p"; done
wait "$collect_pid"
t1=$(date +%s.%N)
cat "$logs"/send*.log
cat "$logs/collect.log"
grep -q "check: all" "$logs/collect.log" || { say "the key-value sums are not exact"; exit 1; }
say "key-value job exact: $tuples tuples from $senders senders in $(python3 -c "print(round($t1-$t0, 2))") s"

kv_seconds=$(python3 -c "print(round($t1-$t0, 3))")
if ((kv_only)); then
    kill -TERM "$card_pid"
    card_rc=0
    wait "$card_pid" || card_rc=$?
    cat "$logs/card.log"
    [ "$card_rc" = 0 ] || { say "card serve failed (status $card_rc)"; exit 1; }
    if [ -n "$summary" ]; then
        cycles=$(sed -n 's/.* and \([0-9]*\) card cycles.*/\1/p' "$logs/collect.log")
        printf 'tuples=%s\nseconds=%s\ncycles=%s\n' "$tuples" "$kv_seconds" "$cycles" >"$summary"
    fi
    say "passed (key-value job only)"
    exit 0
fi

# --- a gradient job ---------------------------------------------------------------
ip netns exec "$ns_host" "$weft" grad fallback --device "unix:$sock" --job 3 --workers "$senders" \
    --listen "$host_ip:7001" --timeout 120 >"$logs/fallback.log" 2>&1 &
fallback_pid=$!
pids+=($fallback_pid)
wait_ready "$logs/fallback.log" "fallback ready" "$fallback_pid" fallback
t0=$(date +%s.%N)
worker_pids=()
for ((i = 0; i < senders; i++)); do
    ip netns exec "$(sender_ns $i)" "$weft" grad worker --card "$card_ip" --fallback "$host_ip:7001" --job 3 \
        --worker "$i" --workers "$senders" --values 4096 --iterations 4 --seed 11 --timeout 120 \
        >"$logs/worker$i.log" 2>&1 &
    worker_pids+=($!)
    pids+=($!)
done
for p in "${worker_pids[@]}"; do wait "$p"; done
wait "$fallback_pid"
t1=$(date +%s.%N)
cat "$logs"/worker*.log "$logs/fallback.log"
say "gradient job exact: $senders workers x 4 iterations x 4096 values in $(python3 -c "print(round($t1-$t0, 2))") s"

# --- MemOps from the card's host ---------------------------------------------------
# The same program and trace as `weft memops run` on the in-process model:
# the completions must be the same.
"$weft" memops run --device sim:model --program examples/memops/pool.toml --trace examples/memops/pool.trace \
    | awk '/^#/ {exit} {print}' | sort >"$work/memops.want"
inns "$ns_host" "$weft" memops send --card "$card_ip" --device "unix:$sock" \
    --program examples/memops/pool.toml --trace examples/memops/pool.trace 2>"$logs/memops.log" | sort >"$work/memops.got"
cat "$logs/memops.log"
if ! diff -u "$work/memops.want" "$work/memops.got"; then
    say "MemOps completions over the host netdev differ from the in-process run's"
    exit 1
fi
say "MemOps: $(wc -l <"$work/memops.got") completions over the host netdev, equal to the in-process run's"

# --- what the faults did ------------------------------------------------------
drops=$(inns "$ns_card" nft list table bridge weft 2>/dev/null | grep -o 'packets [0-9]*' | awk '{s+=$2} END {print s+0}')
say "injected: $drops data frames dropped at the bridge"
for ((i = 0; i < senders; i++)); do
    inns "$(sender_ns $i)" nft list table ip weft | grep -o 'packets [0-9]* .*' | sed "s/^/netns-test: sender $i: /"
done

kill -TERM "$card_pid"
card_rc=0
wait "$card_pid" || card_rc=$?
cat "$logs/card.log"
[ "$card_rc" = 0 ] || { say "card serve failed (status $card_rc)"; exit 1; }
say "passed"
