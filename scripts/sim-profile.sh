#!/usr/bin/env bash
# Where the Verilated weft_top spends its instructions, block by block,
# under `weft bench sim`'s sustained mixed traffic: a callgrind line
# profile of the model's stream runner (weft_run) on a model compiled with
# line tables (WEFT_VERILATOR_DEBUGINFO=1), attributed to the blocks by
# scripts/sim_profile.py. Instruction counts do not depend on what else
# the machine is doing. Needs valgrind and Verilator; takes a few minutes
# (the whole bench runs under callgrind, the collection only inside the
# model).
#
# With --caches it runs callgrind's cache and branch simulation instead,
# on the trained (profile-guided) model and on the same build untrained,
# and prints what a step costs in each: instructions, first-level
# instruction-cache misses, mispredicted branches. Deterministic too, and
# slower (half an hour at the default size).
#
# With --idle the bench offers no frames (`weft bench sim --idle`): what
# evaluating every block costs with nothing to do.
#
# Usage: scripts/sim-profile.sh [--caches] [--idle] [CYCLES]   (default 20000; 10000 with --caches)
set -euo pipefail
cd "$(dirname "$0")/.."
caches=0
idle=()
while [[ ${1:-} == --* ]]; do
    case $1 in
        --caches) caches=1 ;;
        --idle) idle=(--idle) ;;
        *) echo "sim-profile: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
cycles=${1:-$(( caches ? 10000 : 20000 ))}
command -v valgrind >/dev/null || { echo "sim-profile: needs valgrind" >&2; exit 2; }
cargo build --release --quiet -p weft
export WEFT_VERILATOR_DEBUGINFO=1
work=$(mktemp -d)
trap '[[ -n ${WEFT_PROFILE_KEEP:-} ]] && cp "$work/ann.txt" "$WEFT_PROFILE_KEEP"; rm -rf "$work"' EXIT
args=(bench sim --cycles "$cycles" --rust-hdl-cycles 0 --repeat 1 --only verilator "${idle[@]}")
if (( caches )); then
    # The bench runs the trained card twice (timed, then profiled) and
    # the untrained once, each for its configuration and the traffic.
    for run in "verilator:2" "verilator, untrained:1"; do
        name=${run%:*} runs=${run##*:}
        a=(bench sim --cycles "$cycles" --rust-hdl-cycles 0 --repeat 1 --only "$name" "${idle[@]}")
        ./target/release/weft "${a[@]}" --json >"$work/bench.json"
        config=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config_cycles"])' "$work/bench.json")
        valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes \
            --callgrind-out-file="$work/cg.out" --toggle-collect=weft_run \
            ./target/release/weft "${a[@]}" >/dev/null 2>"$work/valgrind.log"
        steps=$(( runs * (cycles + config) ))
        callgrind_annotate "$work/cg.out" >"$work/ann.txt"
        python3 scripts/sim_profile.py --totals "$work/ann.txt" "$steps" "$name"
    done
    exit 0
fi
# Build the model with line tables first, outside callgrind.
./target/release/weft "${args[@]}" --json >"$work/bench.json"
config=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config_cycles"])' "$work/bench.json")
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --toggle-collect=weft_run \
    ./target/release/weft "${args[@]}" >/dev/null 2>"$work/valgrind.log"
callgrind_annotate --auto=yes --show-percs=no --context=0 "$work/cg.out" >"$work/ann.txt"
# The bench runs the card twice (timed, then profiled), each for its
# configuration and the traffic.
python3 scripts/sim_profile.py "$work/ann.txt" "$(( 2 * (cycles + config) ))"
