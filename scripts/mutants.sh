#!/usr/bin/env bash
# Mutation testing of weft's RTL blocks and firmware policies with
# cargo-mutants: does each block's witness test catch bugs planted in it?
#
#   scripts/mutants.sh [--sample N] [--seed S] [--verilator] [--here]
#                      [--out DIR] [--timeout S] [--report] BLOCK...
#   scripts/mutants.sh --list          # the blocks and their mutant counts
#   scripts/mutants.sh --smoke         # a handful of csr mutants (CI)
#
# A mutant of an RTL block edits the body of its rust-hdl `update()` (an
# operator, a negation, a body replaced), so it reaches the rust-hdl
# simulation and the emitted Verilog alike; it is caught when the block's
# witness test (sim/tests/BLOCK.rs: model against rust-hdl, and against the
# Verilated Verilog with --verilator) fails. Without --verilator the
# Verilated witness is left out: it simulates the same emitted design, so
# it can only catch more, and the score is a lower bound (each mutant then
# costs one incremental build, about 40 s on 2 cores, instead of a
# Verilator build too).
#
# --timeout S cuts a mutant's test off after S seconds (default: five times
# the unmutated test's run, plus 30 s).
#
# --sample N tests about N mutants of each block, every k-th of its list
# (cargo-mutants' round-robin shards, offset by --seed), so a block fits
# in well under an hour; without it, every mutant. --report writes
# docs/mutants/BLOCK.md (tried, caught, missed, timed out, unviable, the
# score, every survivor with the reason docs/mutants/survivors.tsv gives
# for it). --here mutates this checkout in place (it must be clean: CI's
# throw-away clone); otherwise a scratch worktree under --out is used, so
# the working tree is never touched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

declare -A FILES=(
    [csr]=hdl/src/csr.rs
    [kv_agg]=hdl/src/kv_agg.rs
    [grad_agg]=hdl/src/grad_agg.rs
    [memops]=hdl/src/memops.rs
    [avm]=hdl/src/avm.rs
    [cdc]=hdl/src/cdc.rs
    [steer]=hdl/src/steer.rs
    [framer]=hdl/src/framer.rs
    [frame_check]=hdl/src/frame_check.rs
    [rec_pack]=hdl/src/rec_pack.rs
    [net_regs]=hdl/src/net_regs.rs
    [grad_fanout]=hdl/src/grad_fanout.rs
    [memops_port]=hdl/src/memops_port.rs
    [top]=hdl/src/top.rs
    [firmware]="firmware/src/avm.rs firmware/src/grad.rs"
)
ORDER=(csr kv_agg grad_agg memops avm cdc steer framer frame_check rec_pack net_regs grad_fanout memops_port top firmware)

sample=0 seed=0 verilator=0 here=0 report=0 smoke=0 list=0 fixed_timeout=0
out=${WEFT_MUTANTS_DIR:-/tmp/weft-mutants}
blocks=()
while (($#)); do
    case $1 in
    --sample) sample=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --verilator) verilator=1; shift ;;
    --here) here=1; shift ;;
    --out) out=$2; shift 2 ;;
    --timeout) fixed_timeout=$2; shift 2 ;;
    --report) report=1; shift ;;
    --smoke) smoke=1; shift ;;
    --list) list=1; shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "mutants: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
        [[ -n ${FILES[$1]:-} ]] || { echo "mutants: no block '$1' (one of: ${ORDER[*]})" >&2; exit 2; }
        blocks+=("$1"); shift ;;
    esac
done
[[ $sample =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ && $fixed_timeout =~ ^[0-9]+$ ]] ||
    { echo "mutants: --sample, --seed and --timeout take numbers" >&2; exit 2; }

if ! cargo mutants --version >/dev/null 2>&1; then
    echo "mutants: installing cargo-mutants"
    cargo install --locked --quiet cargo-mutants
fi

file_args() { local f; for f in ${FILES[$1]}; do printf -- '--file\n%s\n' "$f"; done; }
count() { mapfile -t fa < <(file_args "$1"); cargo mutants --list "${fa[@]}" 2>/dev/null | wc -l; }

if ((list)); then
    for b in "${ORDER[@]}"; do printf '%-12s %5d  %s\n' "$b" "$(count "$b")" "${FILES[$b]}"; done
    exit 0
fi
if ((smoke)); then
    # CI: one block, a handful of mutants, every viable one must be caught.
    # (Shard 3 of 10: four viable mutants and an explained survivor; the
    # report fails unless at least one mutant was caught.)
    blocks=(csr) sample=6 seed=3 here=1
    export MUTANTS_REQUIRE_CAUGHT=1
fi
((${#blocks[@]})) || { echo "mutants: name at least one block (--list shows them)" >&2; exit 2; }

if ((here)); then
    [[ -z $(git status --porcelain --untracked-files=no) ]] ||
        { echo "mutants: --here needs a clean checkout (it edits files in place)" >&2; exit 2; }
    tree=$root
else
    tree=$out/tree
    mkdir -p "$out"
    head=$(git rev-parse HEAD)
    if [[ -d $tree ]]; then
        git -C "$tree" checkout -q --force --detach "$head"
    else
        git worktree add -q --force --detach "$tree" "$head"
    fi
fi

# A caught mutant fails its first failing case: no shrinking (it would run
# the failing simulation hundreds of times) and no regression files.
env_args=(PROPTEST_MAX_SHRINK_ITERS=0 PROPTEST_DISABLE_FAILURE_PERSISTENCE=1)
# Without --verilator the Verilated witness is skipped, not required (CI
# exports WEFT_REQUIRE_VERILATOR=1, which would fail every mutant's test,
# unmutated or not).
((verilator)) || env_args+=(WEFT_VERILATOR=/nonexistent WEFT_REQUIRE_VERILATOR=0)
failed=0
for b in "${blocks[@]}"; do
    n=$(count "$b")
    shard=()
    if ((sample > 0 && n > sample)); then
        k=$(((n + sample - 1) / sample))
        shard=(--shard "$((seed % k))/$k" --sharding round-robin)
    fi
    if [[ $b == firmware ]]; then
        tests=(--test-package weft-fw)
    else
        tests=(--test-package weft-sim "--cargo-arg=--test=$b")
    fi
    mapfile -t fa < <(file_args "$b")
    dir=$out/$b
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "mutants: $b: $n mutants${shard[1]:+, shard ${shard[1]}}"
    started=$(date +%s)
    # The unmutated tree is tested first: a failing baseline would make
    # every mutant look caught. (Done here: cargo-mutants' own baseline
    # builds the mutated package's tests, not --test-package's.)
    if [[ $b == firmware ]]; then base=(-p weft-fw); else base=(-p weft-sim --test "$b"); fi
    (cd "$tree" && env "${env_args[@]}" cargo test -q "${base[@]}" --no-run >"$dir/baseline.log" 2>&1) || true
    t0=$(date +%s)
    if ! (cd "$tree" && env "${env_args[@]}" cargo test -q "${base[@]}" >>"$dir/baseline.log" 2>&1); then
        echo "mutants: $b: the unmutated tests fail (see $dir/baseline.log): no score" >&2
        failed=1
        continue
    fi
    # A mutant that makes a test spin (a handshake that never completes)
    # is cut off at five times the unmutated run, not cargo-mutants'
    # fixed default: a hang then costs a minute, not five.
    timeout=$((5 * ($(date +%s) - t0) + 30))
    ((fixed_timeout)) && timeout=$fixed_timeout
    # cargo-mutants exits 2 when mutants are missed, 3 on timeouts: both are
    # results, read from outcomes.json below.
    (cd "$tree" && env "${env_args[@]}" cargo mutants --in-place --no-shuffle "${fa[@]}" \
        "${tests[@]}" "${shard[@]}" --baseline skip --timeout "$timeout" --build-timeout 900 \
        -o "$dir" >"$dir/run.log" 2>&1) || true
    took=$(($(date +%s) - started))
    [[ -f $dir/mutants.out/outcomes.json ]] || { echo "mutants: $b: no outcomes (see $dir/run.log)" >&2; failed=1; continue; }
    cmd=scripts/mutants.sh
    ((sample)) && cmd+=" --sample $sample"
    ((seed)) && cmd+=" --seed $seed"
    ((fixed_timeout)) && cmd+=" --timeout $fixed_timeout"
    ((verilator)) && cmd+=" --verilator"
    cmd+=" --report $b"
    python3 "$root/scripts/mutants_report.py" "$dir/mutants.out/outcomes.json" "$b" "$n" "$took" \
        "$cmd" "$root/docs/mutants/survivors.tsv" \
        $( ((report)) && echo "$root/docs/mutants/$b.md") || failed=1
done
exit $failed
