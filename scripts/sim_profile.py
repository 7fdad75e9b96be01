#!/usr/bin/env python3
"""Attribute a callgrind line profile of the Verilated weft_top to its blocks.

Reads `callgrind_annotate --auto=yes --context=0` output and sums the
instructions of each source line of the generated model under the block
(`weft_top.<instance>`) the line's statement names first: a statement of
the model assigns or tests signals of one instance, and Verilator names
them `weft_top__DOT__<instance>__...`. Continuation lines belong to the
statement above them. Lines of Verilator's runtime headers (wide-word
helpers) and of weft's wrapper are reported apart. An approximation:
optimised code moves instructions between neighbouring lines.

Usage: sim_profile.py ANNOTATE_OUTPUT STEPS [TOP_N]
       sim_profile.py --totals ANNOTATE_OUTPUT STEPS NAME
         (a cache- and branch-simulated profile's totals a step)
"""
import collections
import re
import sys

HEADER = re.compile(r"^-- Auto-annotated source: (.*)$")
LINE = re.compile(r"^-- line (\d+) -+$")
COUNT = re.compile(r"^\s*([\d,]+)\s")
BLOCK = re.compile(r"weft_top__DOT__([A-Za-z0-9_]+)")


def counts(path):
    """{source file: {line: instructions}} from the annotate output."""
    by = collections.defaultdict(dict)
    cur, line = None, None
    for text in open(path, encoding="utf-8", errors="replace"):
        text = text.rstrip("\n")
        m = HEADER.match(text)
        if m:
            cur, line = m.group(1), None
            continue
        m = LINE.match(text)
        if m:
            line = int(m.group(1))
            continue
        if cur is None or line is None or "=>" in text or "annotated" in text:
            continue
        m = COUNT.match(text)
        if m:
            by[cur][line] = by[cur].get(line, 0) + int(m.group(1).replace(",", ""))
            line += 1
    return by


def owners(path):
    """The block each line of a generated source belongs to."""
    owner, last = {}, "(model glue)"
    for i, text in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        if re.match(r"^(VL_INLINE_OPT )?void ", text):
            last = "(model glue)"
        m = BLOCK.search(text)
        if m:
            parts = m.group(1).split("__DOT__")
            name = parts[0].split("__024")[0]
            last = name if len(parts) > 1 else "top-level signals"
        owner[i] = last
    return owner


def totals(path, steps, name):
    """Print what a step cost: instructions, L1 instruction-cache misses
    and mispredicted conditional branches (callgrind's --cache-sim and
    --branch-sim events)."""
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    events = next(l.split(":", 1)[1].split() for l in lines if l.startswith("Events recorded:"))
    total = next(l for l in lines if "PROGRAM TOTALS" in l)
    values = [int(v.replace(",", "")) for v in re.findall(r"([\d,]+) \(", total)]
    e = dict(zip(events, values))
    print(
        f"{name}: a step {e['Ir'] / steps:,.0f} instructions, "
        f"{e['I1mr'] / steps:,.0f} L1 instruction-cache misses, "
        f"{e['Bcm'] / steps:,.0f} mispredicted conditional branches ({steps:,.0f} steps)"
    )


def main():
    if sys.argv[1] == "--totals":
        totals(sys.argv[2], float(sys.argv[3]), sys.argv[4])
        return
    ann, steps = sys.argv[1], float(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    total = collections.Counter()
    for src, lines in counts(ann).items():
        if "verilated" in src.rsplit("/", 1)[-1]:
            total["(Verilator runtime: wide-word helpers)"] += sum(lines.values())
            continue
        if "weft_wrapper" in src:
            total["(weft's stream runner)"] += sum(lines.values())
            continue
        try:
            own = owners(src)
        except OSError:
            total["(" + src + ")"] += sum(lines.values())
            continue
        for n, v in lines.items():
            total[own.get(n, "(model glue)")] += v
    all_ir = sum(total.values())
    print(f"{all_ir / steps:,.0f} instructions a step, by block (approximate):")
    for name, v in total.most_common(top):
        print(f"  {v / steps:8,.0f}  {100 * v / all_ir:5.1f}%  {name}")


if __name__ == "__main__":
    main()
