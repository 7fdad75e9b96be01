#!/usr/bin/env python3
"""Summarise one block's cargo-mutants outcomes (scripts/mutants.sh).

usage: mutants_report.py OUTCOMES BLOCK LISTED SECONDS COMMAND SURVIVORS [REPORT.md]

Prints the counts and the score; every missed or timed-out mutant is
listed with the reason docs/mutants/survivors.tsv gives for it (a mutant
is keyed by its file, the text of the line it mutates and the mutation, so
the key survives unrelated edits that move the line). Exits 1 when a
survivor has no reason: it is either a test to write or an equivalence to
explain.
"""
import datetime
import json
import os
import re
import sys


def key_of(m, root):
    """(file, stripped source line, mutation) of a cargo-mutants mutant."""
    name = m["name"]
    what = re.sub(r"^[^:]+:\d+:\d+: ", "", name)
    fn = m.get("function") or {}
    suffix = " in " + fn.get("function_name", "")
    if what.endswith(suffix):
        what = what[: -len(suffix)]
    line = ""
    try:
        with open(os.path.join(root, m["file"])) as f:
            line = f.readlines()[m["span"]["start"]["line"] - 1].strip()
    except (OSError, IndexError):
        pass
    return (m["file"], line, what)


def main():
    outcomes, block, listed, seconds, command, survivors = sys.argv[1:7]
    report = sys.argv[7] if len(sys.argv) > 7 else None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    reasons = {}
    if os.path.exists(survivors):
        with open(survivors) as f:
            for row in f:
                if row.startswith("#") or not row.strip():
                    continue
                cols = row.rstrip("\n").split("\t")
                if len(cols) == 4:
                    reasons[tuple(cols[:3])] = cols[3]
    with open(outcomes) as f:
        d = json.load(f)
    try:
        t0 = datetime.datetime.fromisoformat(d["start_time"])
        t1 = datetime.datetime.fromisoformat(d["end_time"])
        seconds = str(round((t1 - t0).total_seconds()))
    except (KeyError, TypeError, ValueError):
        pass
    tally = {"CaughtMutant": 0, "MissedMutant": 0, "Timeout": 0, "Unviable": 0}
    left = []
    for o in d["outcomes"]:
        sc = o["scenario"]
        if sc == "Baseline" and o["summary"] != "Success":
            print(f"mutants: {block}: the unmutated tests fail ({o['summary']}): no score", file=sys.stderr)
            sys.exit(1)
        if not isinstance(sc, dict) or "Mutant" not in sc:
            continue
        s = o["summary"]
        tally[s] = tally.get(s, 0) + 1
        if s == "MissedMutant":
            m = sc["Mutant"]
            k = key_of(m, root)
            left.append((m["name"], s, k, reasons.get(k)))
    tried = sum(tally.values())
    viable = tally["CaughtMutant"] + tally["MissedMutant"] + tally["Timeout"]
    explained = sum(1 for x in left if x[3])
    # Explained survivors (equivalent, or unreachable in simulation) are left
    # out of the score; the raw fraction is shown beside it.
    # A mutant that hangs its test did not pass it: detected, as cargo-mutants
    # counts it apart from the misses.
    detected = tally["CaughtMutant"] + tally["Timeout"]
    score = detected / max(1, viable - explained)
    raw = detected / max(1, viable)
    lines = [
        f"# Mutation testing: `{block}`",
        "",
        f"Command: `{command}` (cargo-mutants {d.get('cargo_mutants_version', '?')}, "
        f"{seconds} s on this machine).",
        "",
        "| listed | tried | caught | missed | timed out | unviable | explained | detected of viable | score |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {listed} | {tried} | {tally['CaughtMutant']} | {tally['MissedMutant']} | "
        f"{tally['Timeout']} | {tally['Unviable']} | {explained} | {100 * raw:.0f}% | {100 * score:.0f}% |",
        "",
        "Viable: caught + missed + timed out; detected: caught + timed out (a mutant that "
        "hangs its test does not pass it). Score: detected / (viable - explained), where an "
        "explained survivor is equivalent (no input tells it apart), out of any "
        "simulation's reach, or caught only by the Verilated witness that a run without "
        "`--verilator` leaves out, each with its reason below. Unviable mutants do not compile "
        "(most replace a `Bits` value with a constructor it lacks).",
        "",
    ]
    if left:
        lines += ["## Survivors", ""]
        for name, s, k, why in left:
            lines.append(f"- `{name}` (missed): {why or '**not yet explained or caught**'}")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if report:
        os.makedirs(os.path.dirname(report), exist_ok=True)
        with open(report, "w") as f:
            f.write(text)
    if os.environ.get("MUTANTS_REQUIRE_CAUGHT") == "1" and tally["CaughtMutant"] == 0:
        print(f"mutants: {block}: no mutant was caught (none viable?): the run proves nothing", file=sys.stderr)
        sys.exit(1)
    unexplained = [x for x in left if not x[3]]
    for name, _, k, _ in unexplained:
        print(f"mutants: unexplained survivor: {name}\n  key: {chr(9).join(k)}", file=sys.stderr)
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
