//! The machinery behind `docs/figures.md`: the registry of figures
//! (`docs/figures.toml`), the markers that wrap each figure in the
//! Markdown, the paths into a command's JSON output and the number formats
//! the docs write.
//!
//! Every function here returns an error for bad input (a malformed
//! registry, a marker left open, a path that reaches nothing); none
//! panics.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What can be wrong with the registry, a document's markers or a value.
#[derive(Debug, thiserror::Error)]
pub enum FigError {
    /// The registry is malformed.
    #[error("{file}: {msg}")]
    Registry {
        /// The registry's path.
        file: String,
        /// What is wrong.
        msg: String,
    },
    /// A document's markers are malformed.
    #[error("{file}:{line}: {msg}")]
    Marker {
        /// The document.
        file: String,
        /// 1-based line of the marker.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A path or format in the registry is malformed.
    #[error("{what} {text:?}: {msg}")]
    Syntax {
        /// `path`, `format` or `template`.
        what: &'static str,
        /// The text.
        text: String,
        /// What is wrong.
        msg: String,
    },
    /// A value could not be taken from a command's output.
    #[error("{path}: {msg}")]
    Extract {
        /// The path.
        path: String,
        /// What is wrong.
        msg: String,
    },
}

fn syntax(what: &'static str, text: &str, msg: impl Into<String>) -> FigError {
    FigError::Syntax {
        what,
        text: text.to_string(),
        msg: msg.into(),
    }
}

// ---------------------------------------------------------------- paths

/// One step of a [`JsonPath`].
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// An object's field.
    Key(String),
    /// An array's element.
    Index(usize),
    /// The one element of an array whose field `key` equals `value`.
    Filter { key: String, value: String },
}

/// A path into JSON: fields separated by dots, `[N]` for an array's
/// element, `[key=value]` for the one element of an array whose field
/// `key` is `value` (a number compared as a number, a string exactly),
/// e.g. `kv[p=0.01].ratio`, `engines[block=avm].usage.luts`.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

impl JsonPath {
    /// Parse a path.
    pub fn parse(text: &str) -> Result<Self, FigError> {
        let err = |m: &str| syntax("path", text, m);
        let mut steps = vec![];
        let mut rest = text;
        let mut first = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or_else(|| err("a `[` without its `]`"))?;
                let inner = &r[..end];
                rest = &r[end + 1..];
                if let Some((k, v)) = inner.split_once('=') {
                    if k.is_empty() || !k.chars().all(is_key_char) {
                        return Err(err("a filter needs a field name before `=`"));
                    }
                    if v.is_empty() {
                        return Err(err("a filter needs a value after `=`"));
                    }
                    steps.push(Step::Filter {
                        key: k.to_string(),
                        value: v.to_string(),
                    });
                } else {
                    let i = inner
                        .parse::<usize>()
                        .map_err(|_| err("`[...]` holds an index or `field=value`"))?;
                    steps.push(Step::Index(i));
                }
            } else {
                let r = if first {
                    rest
                } else {
                    rest.strip_prefix('.')
                        .ok_or_else(|| err("fields are separated by `.`"))?
                };
                let end = r.find(|c: char| !is_key_char(c)).unwrap_or(r.len());
                if end == 0 {
                    return Err(err("an empty field name"));
                }
                steps.push(Step::Key(r[..end].to_string()));
                rest = &r[end..];
            }
            first = false;
        }
        if steps.is_empty() {
            return Err(err("an empty path"));
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value the path reaches in `v`.
    pub fn get<'a>(&self, v: &'a Value) -> Result<&'a Value, FigError> {
        let err = |m: String| FigError::Extract {
            path: self.text.clone(),
            msg: m,
        };
        let mut cur = v;
        for s in &self.steps {
            cur = match s {
                Step::Key(k) => cur
                    .as_object()
                    .ok_or_else(|| err(format!("`{k}`: not an object")))?
                    .get(k)
                    .ok_or_else(|| err(format!("no field `{k}`")))?,
                Step::Index(i) => {
                    let a = cur
                        .as_array()
                        .ok_or_else(|| err(format!("[{i}]: not an array")))?;
                    a.get(*i)
                        .ok_or_else(|| err(format!("[{i}]: the array has {} elements", a.len())))?
                }
                Step::Filter { key, value } => {
                    let a = cur
                        .as_array()
                        .ok_or_else(|| err(format!("[{key}={value}]: not an array")))?;
                    let mut hits = a.iter().filter(|e| matches(e.get(key), value));
                    let hit = hits
                        .next()
                        .ok_or_else(|| err(format!("no element with {key} = {value}")))?;
                    if hits.next().is_some() {
                        return Err(err(format!("several elements with {key} = {value}")));
                    }
                    hit
                }
            };
        }
        Ok(cur)
    }
}

fn matches(field: Option<&Value>, want: &str) -> bool {
    match field {
        Some(Value::String(s)) => s == want,
        Some(Value::Number(n)) => match (n.as_f64(), want.parse::<f64>()) {
            (Some(a), Ok(b)) => a == b,
            _ => false,
        },
        Some(Value::Bool(b)) => want == if *b { "true" } else { "false" },
        _ => false,
    }
}

// ---------------------------------------------------------------- formats

/// How a value is written: `[<|>][width][,][.decimals][%]`, e.g. `.3`
/// (three decimals), `,` (thousands separated by commas), `>6.3` (right
/// aligned in six columns), `.1%` (times 100, one decimal). Empty: a
/// number as JSON writes it, a string as it is. A boolean may be written
/// as words, `?WHEN TRUE|WHEN FALSE` (`?meets|does not meet`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Format {
    words: Option<(String, String)>,
    left: Option<bool>,
    width: usize,
    thousands: bool,
    decimals: Option<usize>,
    percent: bool,
}

impl Format {
    /// Parse a format.
    pub fn parse(text: &str) -> Result<Self, FigError> {
        let err = |m: &str| syntax("format", text, m);
        let mut f = Format::default();
        if let Some(w) = text.strip_prefix('?') {
            let (t, e) = w
                .split_once('|')
                .ok_or_else(|| err("`?` takes two choices: `?WHEN TRUE|WHEN FALSE`"))?;
            f.words = Some((t.to_string(), e.to_string()));
            return Ok(f);
        }
        let mut rest = text;
        if let Some(r) = rest.strip_prefix('<') {
            f.left = Some(true);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('>') {
            f.left = Some(false);
            rest = r;
        }
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            f.width = rest[..digits]
                .parse()
                .ok()
                .filter(|&w| w <= 200)
                .ok_or_else(|| err("a width of at most 200"))?;
            rest = &rest[digits..];
        }
        if let Some(r) = rest.strip_prefix(',') {
            f.thousands = true;
            rest = r;
        }
        if let Some(r) = rest.strip_prefix('.') {
            let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            if digits == 0 {
                return Err(err("`.` needs a number of decimals"));
            }
            let d: usize = r[..digits].parse().map_err(|_| err("too many decimals"))?;
            if d > 12 {
                return Err(err("at most 12 decimals"));
            }
            f.decimals = Some(d);
            rest = &r[digits..];
        }
        if let Some(r) = rest.strip_prefix('%') {
            f.percent = true;
            rest = r;
        }
        if !rest.is_empty() {
            return Err(err("expected [<|>][width][,][.decimals][%]"));
        }
        Ok(f)
    }

    fn numeric(&self) -> bool {
        self.thousands || self.decimals.is_some() || self.percent
    }

    /// `v` written in this format.
    pub fn apply(&self, v: &Value) -> Result<String, String> {
        if let Some((t, e)) = &self.words {
            return match v {
                Value::Bool(b) => Ok(if *b { t.clone() } else { e.clone() }),
                _ => Err(format!(
                    "{v} is not a boolean, and the format chooses words"
                )),
            };
        }
        let (s, number) = match v {
            Value::Number(n) => {
                let s = if self.percent || self.decimals.is_some() {
                    let mut x = n.as_f64().ok_or("not a finite number")?;
                    if self.percent {
                        x *= 100.0;
                    }
                    match self.decimals {
                        Some(d) => format!("{x:.d$}"),
                        None => format!("{x}"),
                    }
                } else if n.is_f64() {
                    // 52.0 as 52, 17.5 as 17.5 (JSON would write 52.0).
                    format!("{}", n.as_f64().ok_or("not a finite number")?)
                } else {
                    n.to_string()
                };
                let s = if self.thousands { group(&s) } else { s };
                (if self.percent { s + "%" } else { s }, true)
            }
            Value::String(s) if !self.numeric() => (s.clone(), false),
            Value::Bool(b) if !self.numeric() => (b.to_string(), false),
            Value::String(_) | Value::Bool(_) => {
                return Err(format!("{v} is not a number, and the format is numeric"))
            }
            Value::Null => return Err("the value is null".into()),
            Value::Array(_) | Value::Object(_) => {
                return Err("the path reaches an array or object, not a value".into())
            }
        };
        let pad = self.width.saturating_sub(s.chars().count());
        Ok(if self.left.unwrap_or(!number) {
            s + &" ".repeat(pad)
        } else {
            " ".repeat(pad) + &s
        })
    }
}

/// Thousands separated by commas in a number's integer part.
fn group(s: &str) -> String {
    let (sign, body) = match s.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", s),
    };
    let int_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (int, tail) = body.split_at(int_end);
    let mut out = String::from(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out + tail
}

// ---------------------------------------------------------------- templates

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(String),
    Field(JsonPath, Format),
}

/// Text with `{path}` or `{path:format}` fields (`{{` and `}}` are
/// braces): a whole block of a document, a table or a verbatim output.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parse a template.
    pub fn parse(text: &str) -> Result<Self, FigError> {
        let err = |m: &str| syntax("template", text, m);
        let mut pieces = vec![];
        let mut lit = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|x| x.1) == Some('{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek().map(|x| x.1) == Some('}') => {
                    chars.next();
                    lit.push('}');
                }
                '}' => return Err(err("a `}` without its `{` (write `}}` for a brace)")),
                '{' => {
                    let body = &text[i + 1..];
                    // The field ends at the first `}` outside `[...]`.
                    let mut depth = 0usize;
                    let mut end = None;
                    let mut colon = None;
                    for (j, d) in body.char_indices() {
                        match d {
                            '[' => depth += 1,
                            ']' => depth = depth.saturating_sub(1),
                            ':' if depth == 0 && colon.is_none() => colon = Some(j),
                            '}' if depth == 0 => {
                                end = Some(j);
                                break;
                            }
                            '\n' => break,
                            _ => {}
                        }
                    }
                    let end = end.ok_or_else(|| err("a `{` without its `}` on its line"))?;
                    let (p, f) = match colon {
                        Some(c) => (&body[..c], &body[c + 1..end]),
                        None => (&body[..end], ""),
                    };
                    if !lit.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut lit)));
                    }
                    pieces.push(Piece::Field(JsonPath::parse(p)?, Format::parse(f)?));
                    // Skip the field's characters.
                    let stop = i + 1 + end;
                    while chars.peek().is_some_and(|x| x.0 <= stop) {
                        chars.next();
                    }
                }
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Field(..))) {
            return Err(err("a template without a single `{field}`"));
        }
        Ok(Template { pieces })
    }

    /// How many values the template holds.
    pub fn fields(&self) -> usize {
        self.pieces
            .iter()
            .filter(|p| matches!(p, Piece::Field(..)))
            .count()
    }

    /// The template filled from `v`.
    pub fn render(&self, v: &Value) -> Result<String, FigError> {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Field(path, f) => {
                    let x = path.get(v)?;
                    let s = f.apply(x).map_err(|msg| FigError::Extract {
                        path: path.text.clone(),
                        msg,
                    })?;
                    let _ = write!(out, "{s}");
                }
            }
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- registry

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    #[serde(default)]
    command: BTreeMap<String, RawCommand>,
    #[serde(default)]
    figure: Vec<RawFigure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    args: Vec<String>,
    #[serde(default)]
    slow: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    name: String,
    command: String,
    path: Option<String>,
    format: Option<String>,
    template: Option<String>,
}

/// A command whose JSON output figures are taken from.
#[derive(Clone, Debug)]
pub struct Command {
    /// Its name in the registry.
    pub name: String,
    /// Arguments of the `weft` binary (`--json` among them).
    pub args: Vec<String>,
    /// Checked only with `WEFT_FIGURES_SLOW=1`.
    pub slow: bool,
}

impl Command {
    /// The command as a reader would type it.
    pub fn display(&self) -> String {
        let mut s = String::from("weft");
        for a in &self.args {
            s.push(' ');
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                s.push_str(&format!("'{}'", a.replace('\'', "'\\''")));
            } else {
                s.push_str(a);
            }
        }
        s
    }
}

/// What a figure is made of.
#[derive(Clone, Debug)]
pub enum Body {
    /// One value, inline.
    Value(JsonPath, Format),
    /// A block of text (the marker's content is a newline, the rendered
    /// template and a newline).
    Block(Template),
}

/// A figure of the registry.
#[derive(Clone, Debug)]
pub struct Figure {
    /// The command it comes from.
    pub command: String,
    /// Value or block.
    pub body: Body,
}

impl Figure {
    /// How many values the figure holds.
    pub fn values(&self) -> usize {
        match &self.body {
            Body::Value(..) => 1,
            Body::Block(t) => t.fields(),
        }
    }

    /// The marker's content for the command's output `v`.
    pub fn render(&self, v: &Value) -> Result<String, FigError> {
        match &self.body {
            Body::Value(p, f) => {
                let x = p.get(v)?;
                f.apply(x).map_err(|msg| FigError::Extract {
                    path: p.text.clone(),
                    msg,
                })
            }
            Body::Block(t) => Ok(format!("\n{}\n", t.render(v)?.trim_end_matches('\n'))),
        }
    }
}

/// `docs/figures.toml`: the commands and the figures taken from them.
#[derive(Clone, Debug)]
pub struct Registry {
    /// Commands by name.
    pub commands: BTreeMap<String, Command>,
    /// Figures by name.
    pub figures: BTreeMap<String, Figure>,
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl Registry {
    /// Parse the registry's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, FigError> {
        let err = |msg: String| FigError::Registry {
            file: file.to_string(),
            msg,
        };
        let raw: RawRegistry = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let mut commands = BTreeMap::new();
        for (name, c) in raw.command {
            if !valid_name(&name) {
                return Err(err(format!(
                    "command {name:?}: names are letters, digits, `.`, `_` and `-`"
                )));
            }
            if !c.args.iter().any(|a| a == "--json") {
                return Err(err(format!(
                    "command {name}: its args must include \"--json\" (figures are taken from JSON)"
                )));
            }
            commands.insert(
                name.clone(),
                Command {
                    name,
                    args: c.args,
                    slow: c.slow,
                },
            );
        }
        let mut figures = BTreeMap::new();
        for (i, f) in raw.figure.into_iter().enumerate() {
            let at = format!("figure {} ({:?})", i + 1, f.name);
            if !valid_name(&f.name) {
                return Err(err(format!(
                    "{at}: names are letters, digits, `.`, `_` and `-`"
                )));
            }
            if !commands.contains_key(&f.command) {
                return Err(err(format!("{at}: no command {:?}", f.command)));
            }
            let body = match (f.path, f.template) {
                (Some(p), None) => Body::Value(
                    JsonPath::parse(&p).map_err(|e| err(format!("{at}: {e}")))?,
                    Format::parse(f.format.as_deref().unwrap_or(""))
                        .map_err(|e| err(format!("{at}: {e}")))?,
                ),
                (None, Some(t)) => {
                    if f.format.is_some() {
                        return Err(err(format!(
                            "{at}: a template's fields carry their own formats ({{path:format}})"
                        )));
                    }
                    Body::Block(Template::parse(&t).map_err(|e| err(format!("{at}: {e}")))?)
                }
                _ => {
                    return Err(err(format!(
                        "{at}: give exactly one of `path` (a value) and `template` (a block)"
                    )))
                }
            };
            let fig = Figure {
                command: f.command,
                body,
            };
            if figures.insert(f.name.clone(), fig).is_some() {
                return Err(err(format!("{at}: a second figure of that name")));
            }
        }
        for c in commands.keys() {
            if !figures.values().any(|f| &f.command == c) {
                return Err(err(format!("command {c}: no figure uses it")));
            }
        }
        Ok(Registry { commands, figures })
    }
}

// ---------------------------------------------------------------- markers

/// Opening marker of a figure: `<!--fig:NAME-->`.
pub const OPEN: &str = "<!--fig:";
/// Closing marker of a figure.
pub const CLOSE: &str = "<!--/fig-->";
/// Opening marker of a machine-dependent (wall-clock) passage.
pub const WALL_OPEN: &str = "<!--wall-clock-->";
/// Closing marker of a machine-dependent passage.
pub const WALL_CLOSE: &str = "<!--/wall-clock-->";

/// A figure's place in a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// The figure's name.
    pub name: String,
    /// 1-based line of the opening marker.
    pub line: usize,
    /// Byte range of the content between the markers.
    pub content: std::ops::Range<usize>,
}

/// A document's figure markers and wall-clock passages.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// The figures, in order.
    pub figures: Vec<Marker>,
    /// Byte ranges of the wall-clock passages' contents.
    pub wall_clock: Vec<std::ops::Range<usize>>,
    /// Byte ranges of code: fenced blocks and inline code spans. Markers
    /// there are examples, not markers.
    pub code: Vec<std::ops::Range<usize>>,
}

/// Byte ranges of fenced code blocks (between lines that start with
/// three backticks) and of inline code spans (a run of backticks to the
/// next run of the same length, within a paragraph).
pub fn code_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = vec![];
    let mut fence: Option<usize> = None;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let end = line_start + line.len();
        if line.trim_start().starts_with("```") {
            match fence.take() {
                Some(s) => out.push(s..end),
                None => fence = Some(line_start),
            }
        }
        line_start = end;
    }
    if let Some(s) = fence {
        out.push(s..text.len());
    }
    let fenced = out.clone();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(r) = fenced.iter().find(|r| r.contains(&i)) {
            i = r.end;
            continue;
        }
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        let mut j = i + run;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'\n' && b.get(j + 1) == Some(&b'\n') {
                break;
            }
            if b[j] == b'`' {
                let n = b[j..].iter().take_while(|&&c| c == b'`').count();
                if n == run {
                    close = Some(j + n);
                    break;
                }
                j += n;
            } else {
                j += 1;
            }
        }
        match close {
            Some(e) => {
                out.push(i..e);
                i = e;
            }
            None => i += run,
        }
    }
    out
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Find the markers of `text` (`file` names it in errors). Markers do not
/// nest, except that a wall-clock passage may not hold figures either.
pub fn scan(file: &str, text: &str) -> Result<Scan, FigError> {
    let err = |at: usize, msg: String| FigError::Marker {
        file: file.to_string(),
        line: line_of(text, at),
        msg,
    };
    let mut out = Scan {
        code: code_ranges(text),
        ..Scan::default()
    };
    let mut pos = 0;
    while let Some(off) = text[pos..].find("<!--") {
        let at = pos + off;
        let rest = &text[at..];
        if out.code.iter().any(|r| r.contains(&at)) {
            pos = at + 4;
        } else if let Some(r) = rest.strip_prefix(OPEN) {
            let end = r
                .find("-->")
                .ok_or_else(|| err(at, "a figure marker without its `-->`".into()))?;
            let name = &r[..end];
            if !valid_name(name) {
                return Err(err(at, format!("a figure marker with a bad name {name:?}")));
            }
            let start = at + OPEN.len() + end + 3;
            let close = next_marker(text, start, &out.code)
                .filter(|&c| text[c..].starts_with(CLOSE))
                .ok_or_else(|| {
                    err(
                        at,
                        format!("figure {name}: no {CLOSE} before the next marker or the end"),
                    )
                })?;
            out.figures.push(Marker {
                name: name.to_string(),
                line: line_of(text, at),
                content: start..close,
            });
            pos = close + CLOSE.len();
        } else if rest.starts_with(WALL_OPEN) {
            let start = at + WALL_OPEN.len();
            let close = next_marker(text, start, &out.code)
                .filter(|&c| text[c..].starts_with(WALL_CLOSE))
                .ok_or_else(|| {
                    err(
                        at,
                        format!("a wall-clock passage without its {WALL_CLOSE} before the next marker or the end"),
                    )
                })?;
            let body = text[start..close]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !has_measured_date(&body) || !body.contains("machine-dependent") {
                return Err(err(
                    at,
                    "a wall-clock passage must say `measured on YYYY-MM-DD` and `machine-dependent`"
                        .into(),
                ));
            }
            out.wall_clock.push(start..close);
            pos = close + WALL_CLOSE.len();
        } else if rest.starts_with(CLOSE) || rest.starts_with(WALL_CLOSE) {
            return Err(err(at, "a closing marker without its opening one".into()));
        } else {
            // Any other comment.
            pos = at + 4;
        }
    }
    Ok(out)
}

/// The next figure or wall-clock marker (opening or closing) from `from`,
/// outside code.
fn next_marker(text: &str, from: usize, code: &[std::ops::Range<usize>]) -> Option<usize> {
    let mut pos = from;
    while let Some(off) = text[pos..].find("<!--") {
        let at = pos + off;
        let r = &text[at..];
        if !code.iter().any(|c| c.contains(&at))
            && [OPEN, CLOSE, WALL_OPEN, WALL_CLOSE]
                .iter()
                .any(|m| r.starts_with(m))
        {
            return Some(at);
        }
        pos = at + 4;
    }
    None
}

fn has_measured_date(s: &str) -> bool {
    s.match_indices("measured on ").any(|(i, m)| {
        let d = &s.as_bytes()[i + m.len()..];
        d.len() >= 10
            && d[..10].iter().enumerate().all(|(k, b)| match k {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            })
    })
}

/// Units that make a number a measured figure: resources and wall time.
const UNITS: &[&str] = &[
    "LUT", "FF", "BRAM36", "URAM", "DSP", "CARRY", "s", "seconds", "minutes", "cycles/s",
];

/// Numbers in `text`, outside figure markers, wall-clock passages and code, that
/// are followed by a resource or wall-time unit (`8049 LUT`, `about 6 s`):
/// each is a figure the docs state without a command behind it. Returns
/// (1-based line, the number and its unit).
pub fn unmarked(text: &str, scan: &Scan) -> Vec<(usize, String)> {
    let covered = |i: usize| {
        scan.figures.iter().any(|m| m.content.contains(&i))
            || scan.wall_clock.iter().any(|r| r.contains(&i))
            || scan.code.iter().any(|r| r.contains(&i))
    };
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len()
            && (b[j].is_ascii_digit()
                || ((b[j] == b',' || b[j] == b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit)))
        {
            j += 1;
        }
        let after = &text[j..];
        let word = after.strip_prefix(' ').unwrap_or(after);
        let unit = UNITS.iter().find(|u| {
            word.starts_with(**u)
                && !word[u.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
        });
        if let Some(u) = unit {
            if !covered(i) {
                out.push((line_of(text, i), format!("{} {u}", &text[i..j])));
            }
        }
        i = j.max(i + 1);
    }
    out
}
