#!/usr/bin/env bash
# How many shadow copies (`__Vdly__` variables) Verilator keeps for
# weft_top's registers: each is copied in and out on every cycle. Emits
# the top with the release CLI, Verilates it with the flags the model
# builder uses (sim/src/verilator/builder.rs) and lists the shadowed
# registers, then their count. Needs Verilator; takes about a minute.
#
# Usage: scripts/vl-shadows.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v verilator >/dev/null || { echo "vl-shadows: needs verilator" >&2; exit 2; }
cargo build --release --quiet -p weft
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
./target/release/weft hdl emit --out "$work/v" >/dev/null
verilator --cc -O3 --x-assign fast --x-initial 0 --prefix Vtop --top-module weft_top \
    -Wno-fatal --Mdir "$work/obj" "$work/v/weft_top.v" >"$work/verilator.log" 2>&1 ||
    { cat "$work/verilator.log" >&2; echo "vl-shadows: verilator failed" >&2; exit 1; }
grep -o '__Vdly__[A-Za-z0-9_]*' "$work/obj/Vtop___024root.h" | sort -u |
    sed -e 's/^__Vdly__weft_top__DOT__//' -e 's/__DOT__/./g' -e 's/__024/$/g' >"$work/shadows.txt"
cat "$work/shadows.txt"
echo "$(wc -l <"$work/shadows.txt") shadowed registers"
