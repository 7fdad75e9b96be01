//! Figures that cannot go stale (`docs/figures.md`): every figure that
//! README.md and docs/*.md state in cycles, tuples, beats, ratios or
//! resources sits between markers, `<!--fig:NAME-->…<!--/fig-->`, and
//! `docs/figures.toml` names the `weft … --json` command and the path into
//! its output that produce it. This test runs the commands through the
//! built binary and fails, listing each figure, when the docs differ.
//!
//! - `WEFT_FIGURES_WRITE=1` rewrites the docs with what the commands print
//!   instead of failing;
//! - `WEFT_FIGURES_SLOW=1` also runs the slow commands (yosys resource
//!   estimates, long benchmarks); without it their figures are only checked
//!   for a registry entry;
//! - `WEFT_FIGURES_ONLY=NAME,…` runs only those commands of the registry
//!   (and checks only their figures).

#[path = "figures/support.rs"]
mod support;

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use support::{scan, unmarked, Body, FigError, Format, JsonPath, Registry, Template};

const REGISTRY: &str = "docs/figures.toml";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// README.md and every docs/*.md, by path relative to the root, with text.
fn documents(root: &Path) -> Result<Vec<(String, String)>, String> {
    let mut names = vec!["README.md".to_string()];
    let dir = root.join("docs");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut md: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    md.sort();
    names.extend(md);
    names
        .into_iter()
        .map(|n| {
            std::fs::read_to_string(root.join(&n))
                .map(|t| (n.clone(), t))
                .map_err(|e| format!("{n}: {e}"))
        })
        .collect()
}

/// Run `weft ARGS` from the root and parse its JSON.
fn run_json(root: &Path, args: &[String]) -> Result<Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| format!("running weft: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("its output is not JSON: {e}"))
}

/// A block's rendering with the blank lines the document keeps after the
/// opening marker and before the closing one (Markdown needs one after a
/// table); a value's as it is.
fn keep_blank_lines(found: &str, exp: String) -> String {
    if !exp.starts_with('\n') {
        return exp;
    }
    let lead = found.len() - found.trim_start_matches('\n').len();
    let trail = found.len() - found.trim_end_matches('\n').len();
    format!(
        "{}{}{}",
        "\n".repeat(lead.max(1)),
        exp.trim_matches('\n'),
        "\n".repeat(trail.max(1))
    )
}

/// One stale figure, as the failure lists it: for a block, its first line
/// that differs.
fn difference(file: &str, line: usize, name: &str, found: &str, exp: &str, cmd: &str) -> String {
    if !exp.starts_with('\n') {
        return format!(
            "{file}:{line}: figure {name}: the docs say {found:?}, `{cmd}` gives {exp:?}"
        );
    }
    let (f, e): (Vec<&str>, Vec<&str>) = (found.lines().collect(), exp.lines().collect());
    let k = (0..f.len().max(e.len()))
        .find(|&k| f.get(k) != e.get(k))
        .unwrap_or(0);
    format!(
        "{file}:{}: figure {name} (block): the docs say {:?}, `{cmd}` gives {:?}",
        line + k,
        f.get(k).copied().unwrap_or("(nothing)"),
        e.get(k).copied().unwrap_or("(nothing)")
    )
}

#[test]
fn the_docs_figures_are_what_their_commands_print() {
    let root = root();
    let write = flag("WEFT_FIGURES_WRITE");
    let slow = flag("WEFT_FIGURES_SLOW");
    let only: Option<BTreeSet<String>> = std::env::var("WEFT_FIGURES_ONLY")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| v.split(',').map(|c| c.trim().to_string()).collect());
    let reg_text =
        std::fs::read_to_string(root.join(REGISTRY)).unwrap_or_else(|e| panic!("{REGISTRY}: {e}"));
    let reg = Registry::parse(REGISTRY, &reg_text).unwrap_or_else(|e| panic!("{e}"));
    let docs = documents(&root).unwrap_or_else(|e| panic!("{e}"));

    // Markers: well formed, named in the registry, blocks where the
    // registry has a template; every registry entry used; no resource or
    // wall-time figure outside markers.
    let mut problems: Vec<String> = vec![];
    let mut scans = vec![];
    let mut used = BTreeSet::new();
    for (file, text) in &docs {
        let s = match scan(file, text) {
            Ok(s) => s,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        for m in &s.figures {
            used.insert(m.name.clone());
            let block = text[m.content.clone()].starts_with('\n');
            match reg.figures.get(&m.name) {
                None => problems.push(format!(
                    "{file}:{}: figure {} has no entry in {REGISTRY}",
                    m.line, m.name
                )),
                Some(f) if matches!(f.body, Body::Block(_)) != block => problems.push(format!(
                    "{file}:{}: figure {} is a {} in {REGISTRY} but {} here",
                    m.line,
                    m.name,
                    if block { "value" } else { "template" },
                    if block {
                        "a block (its marker ends the line)"
                    } else {
                        "inline"
                    }
                )),
                Some(_) => {}
            }
        }
        for (line, what) in unmarked(text, &s) {
            problems.push(format!(
                "{file}:{line}: `{what}` is a measured figure outside markers: give it a command \
                 (<!--fig:…-->) or mark the passage <!--wall-clock-->measured on YYYY-MM-DD with \
                 COMMAND, machine-dependent<!--/wall-clock-->"
            ));
        }
        scans.push((file.clone(), s));
    }
    for name in reg.figures.keys() {
        if !used.contains(name) {
            problems.push(format!("{REGISTRY}: figure {name} is used in no document"));
        }
    }
    if let Some(only) = &only {
        for c in only {
            if !reg.commands.contains_key(c) {
                problems.push(format!("WEFT_FIGURES_ONLY: no command {c} in {REGISTRY}"));
            }
        }
    }
    if !problems.is_empty() {
        panic!("{}", problems.join("\n"));
    }

    // Run each command that a checked figure needs, once.
    let mut outputs: BTreeMap<&str, Result<Value, String>> = BTreeMap::new();
    let mut skipped = 0usize;
    let start = Instant::now();
    for c in reg.commands.values() {
        if c.slow && !slow || only.as_ref().is_some_and(|o| !o.contains(&c.name)) {
            skipped += reg
                .figures
                .values()
                .filter(|f| f.command == c.name)
                .map(|f| f.values())
                .sum::<usize>();
            continue;
        }
        let t = Instant::now();
        let out = run_json(&root, &c.args);
        eprintln!(
            "figures: {} ({:.1} s)",
            c.display(),
            t.elapsed().as_secs_f64()
        );
        outputs.insert(c.name.as_str(), out);
    }

    // Compare (or rewrite).
    let mut checked = 0usize;
    let mut stale: Vec<String> = vec![];
    let mut rewrites: Vec<(String, String)> = vec![];
    for ((file, text), (_, s)) in docs.iter().zip(&scans) {
        let mut new_text = String::new();
        let mut last = 0;
        for m in &s.figures {
            let Some(fig) = reg.figures.get(&m.name) else {
                continue;
            };
            let Some(out) = outputs.get(fig.command.as_str()) else {
                continue;
            };
            let cmd = &reg.commands[&fig.command];
            let found = &text[m.content.clone()];
            let Ok(v) = out else {
                // Reported once per command, below.
                continue;
            };
            match fig.render(v).map(|e| keep_blank_lines(found, e)) {
                Err(e) => problems.push(format!(
                    "{file}:{}: figure {}: {e} (from `{}`)",
                    m.line,
                    m.name,
                    cmd.display()
                )),
                Ok(exp) => {
                    checked += fig.values();
                    if exp != found {
                        stale.push(difference(
                            file,
                            m.line,
                            &m.name,
                            found,
                            &exp,
                            &cmd.display(),
                        ));
                        new_text.push_str(&text[last..m.content.start]);
                        new_text.push_str(&exp);
                        last = m.content.end;
                    }
                }
            }
        }
        if last > 0 {
            new_text.push_str(&text[last..]);
            rewrites.push((file.clone(), new_text));
        }
    }
    for (name, out) in &outputs {
        if let Err(e) = out {
            problems.push(format!(
                "{REGISTRY}: command {name}, `{}`, failed: {e}",
                reg.commands[*name].display()
            ));
        }
    }
    eprintln!(
        "figures: {checked} values checked in {:.1} s; {skipped} not checked{}",
        start.elapsed().as_secs_f64(),
        if skipped == 0 {
            ""
        } else if only.is_some() {
            " (their commands are slow or not in WEFT_FIGURES_ONLY)"
        } else {
            " (slow: WEFT_FIGURES_SLOW=1 checks them)"
        }
    );
    if !problems.is_empty() {
        panic!("{}", problems.join("\n"));
    }
    if write {
        for (file, t) in &rewrites {
            std::fs::write(root.join(file), t).unwrap_or_else(|e| panic!("{file}: {e}"));
            eprintln!("figures: rewrote {file}");
        }
        for s in &stale {
            eprintln!("figures: updated {s}");
        }
    } else if !stale.is_empty() {
        panic!(
            "{} figure(s) in the docs differ from what their commands print now:\n{}\n\
             to take the commands' figures: WEFT_FIGURES_WRITE=1 cargo test -p weft --test figures{}",
            stale.len(),
            stale.join("\n"),
            if slow { " (with WEFT_FIGURES_SLOW=1)" } else { "" }
        );
    }
}

// The machinery itself, on small inputs.

#[test]
fn paths_reach_fields_elements_and_filtered_elements() {
    let v = json!({"kv": [{"p": 0.0, "r": 1}, {"p": 0.01, "r": 0.98}],
                   "engines": [{"block": "avm", "usage": {"luts": 8049}}]});
    let get = |p: &str| JsonPath::parse(p).and_then(|p| p.get(&v).cloned());
    assert_eq!(get("kv[p=0.01].r").unwrap(), json!(0.98));
    assert_eq!(get("kv[1].p").unwrap(), json!(0.01));
    assert_eq!(get("engines[block=avm].usage.luts").unwrap(), json!(8049));
    for bad in [
        "kv[p=0.5].r",
        "kv[7]",
        "nope",
        "kv.p",
        "engines[block=avm].usage.ffs",
    ] {
        assert!(
            matches!(get(bad), Err(FigError::Extract { .. })),
            "{bad} reached something"
        );
    }
    for bad in ["", "a..b", "a[", "a[x]", "a[=1]", "a[k=]", ".a", "a b"] {
        assert!(
            matches!(JsonPath::parse(bad), Err(FigError::Syntax { .. })),
            "{bad:?} parsed"
        );
    }
    let two = json!([{"k": 1}, {"k": 1}]);
    assert!(JsonPath::parse("[k=1]").unwrap().get(&two).is_err());
}

#[test]
fn formats_write_numbers_as_the_docs_do() {
    let f = |fmt: &str, v: Value| Format::parse(fmt).unwrap().apply(&v).unwrap();
    assert_eq!(f("", json!(8049)), "8049");
    assert_eq!(f("", json!(17.5)), "17.5");
    assert_eq!(f("", json!(52.0)), "52");
    assert_eq!(f(",", json!(46817)), "46,817");
    assert_eq!(f(",", json!(-1303680)), "-1,303,680");
    assert_eq!(f(".3", json!(0.8038585209003215)), "0.804");
    assert_eq!(f(",.2", json!(1234567.891)), "1,234,567.89");
    assert_eq!(f(".1%", json!(0.0364)), "3.6%");
    assert_eq!(f(">7.3", json!(1.0)), "  1.000");
    assert_eq!(f("<6", json!("ab")), "ab    ");
    assert_eq!(f("4", json!(19)), "  19");
    assert_eq!(f("?met|not met", json!(false)), "not met");
    assert_eq!(f("", json!("sim:model")), "sim:model");
    let fails = |fmt: &str, v: Value| Format::parse(fmt).unwrap().apply(&v).is_err();
    assert!(fails(".3", json!("text")));
    assert!(fails("?a|b", json!(1)));
    assert!(fails("", json!(null)));
    assert!(fails("", json!([1])));
    for bad in [".", "x", ".3,", "?ab", ".99", "<<3", ">999999999"] {
        assert!(Format::parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn templates_fill_fields_and_keep_braces() {
    let v = json!({"rows": [{"name": "a", "x": 1.0}], "n": 2000});
    let t = Template::parse("| {rows[name=a].x:>6.3} | {{n}} {n:,} |").unwrap();
    assert_eq!(t.fields(), 2);
    assert_eq!(t.render(&v).unwrap(), "|  1.000 | {n} 2,000 |");
    for bad in ["no fields", "{n", "n}", "{n:.x}", "{:3}"] {
        assert!(Template::parse(bad).is_err(), "{bad:?} parsed");
    }
    assert!(Template::parse("{missing}").unwrap().render(&v).is_err());
}

#[test]
fn markers_are_found_and_malformed_ones_named() {
    let text = "a <!--fig:x.y-->0.5<!--/fig--> b\n<!-- other -->\n<!--fig:t-->\n|1|\n<!--/fig-->\n\
                <!--wall-clock-->about 5 s, measured on 2026-12-01 with `time weft`, machine-dependent<!--/wall-clock-->\n";
    let s = scan("t.md", text).unwrap();
    assert_eq!(s.figures.len(), 2);
    assert_eq!(s.figures[0].name, "x.y");
    assert_eq!(&text[s.figures[0].content.clone()], "0.5");
    assert_eq!(s.figures[1].line, 3);
    assert_eq!(&text[s.figures[1].content.clone()], "\n|1|\n");
    assert_eq!(s.wall_clock.len(), 1);
    assert!(unmarked(text, &s).is_empty());
    for (bad, line) in [
        ("x\n<!--fig:a-->1", 2),
        ("<!--fig:a-->1<!--fig:b-->2<!--/fig-->", 1),
        ("\n\n<!--/fig-->", 3),
        ("<!--fig:a b-->1<!--/fig-->", 1),
        ("<!--fig:a", 1),
        ("<!--wall-clock-->5 s<!--/wall-clock-->", 1),
        (
            "<!--wall-clock-->measured on 2026-1-1, machine-dependent<!--/wall-clock-->",
            1,
        ),
    ] {
        match scan("t.md", bad) {
            Err(FigError::Marker { line: l, .. }) => assert_eq!(l, line, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}

#[test]
fn unmarked_resource_and_wall_time_figures_are_found() {
    let text = "8049 LUT, 36 s, 512 slots, 0x1fd3, 4 ns, at 20k cycles/s; <!--fig:a-->7134 FF<!--/fig-->\n\
                `5 s` and `<!--fig:b-->` in code\n```\n<!--wall-clock-->\n```\n";
    let s = scan("t.md", text).unwrap();
    let found: Vec<String> = unmarked(text, &s).into_iter().map(|x| x.1).collect();
    assert_eq!(found, ["8049 LUT", "36 s"]);
    assert_eq!(s.figures.len(), 1);
    assert!(s.wall_clock.is_empty());
}

#[test]
fn a_malformed_registry_is_refused_with_the_reason() {
    let ok = "[command.c]\nargs = [\"bench\", \"--json\"]\n[[figure]]\nname = \"f\"\ncommand = \"c\"\npath = \"a.b\"\n";
    let r = Registry::parse("r.toml", ok).unwrap();
    assert_eq!(r.figures["f"].values(), 1);
    for (bad, says) in [
        ("[command.c]\nargs = [\"bench\"]\n", "--json"),
        ("[command.c]\nargs = [\"--json\"]\n", "no figure uses it"),
        (
            &ok.replace("command = \"c\"", "command = \"d\""),
            "no command",
        ),
        (&ok.replace("path = \"a.b\"", "path = \"a..b\""), "path"),
        (
            &ok.replace("path = \"a.b\"", "pth = \"a.b\""),
            "unknown field",
        ),
        (&ok.replace("path = \"a.b\"\n", ""), "exactly one of"),
        (&format!("{ok}format = \"x\"\n"), "format"),
        (
            &format!("{ok}[[figure]]\nname = \"f\"\ncommand = \"c\"\npath = \"a\"\n"),
            "second figure",
        ),
        ("[command.c\n", "r.toml"),
        (&ok.replace("name = \"f\"", "name = \"f g\""), "names are"),
    ] {
        match Registry::parse("r.toml", bad) {
            Err(e) => assert!(e.to_string().contains(says), "{bad:?}: {e}"),
            Ok(_) => panic!("{bad:?} parsed"),
        }
    }
}

proptest::proptest! {
    #[test]
    fn no_input_makes_the_machinery_panic(text in "(<!--(/?fig:?|/?wall-clock)?[a-z.]{0,3}-->|`{1,3}|\\{|\\}|\\[|\\]|[a-z=:.,%<>?|]|[0-9]{1,4}|measured on 2026-12-01|machine-dependent| s |\n| LUT){0,40}") {
        let v = json!({"a": [{"b": 1.5, "c": "x"}], "d": true});
        if let Ok(s) = scan("p.md", &text) {
            let _ = unmarked(&text, &s);
        }
        if let Ok(t) = Template::parse(&text) {
            let _ = t.render(&v);
        }
        if let Ok(p) = JsonPath::parse(&text) {
            let _ = p.get(&v);
        }
        if let Ok(f) = Format::parse(&text) {
            let _ = f.apply(&v);
        }
        let _ = Registry::parse("p.toml", &text);
    }
}

#[test]
fn blocks_keep_the_blank_lines_around_them_and_values_stay_inline() {
    assert_eq!(
        keep_blank_lines("\n\n|a|\n\n", "\n|b|\n".into()),
        "\n\n|b|\n\n"
    );
    assert_eq!(keep_blank_lines("\n|a|\n", "\n|b|\n".into()), "\n|b|\n");
    assert_eq!(keep_blank_lines("0.5", "0.6".into()), "0.6");
    let d = difference(
        "x.md",
        10,
        "t",
        "\n|a|\n|b|\n",
        "\n|a|\n|c|\n",
        "weft t --json",
    );
    assert!(d.starts_with("x.md:12: figure t (block)"), "{d}");
}
