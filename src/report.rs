//! `isim report`: one self-contained HTML file for a run, sweep or PCA directory — CSS and
//! SVG charts inline, no scripts, no fetches — to open in any browser or attach to a mail.
//!
//! What goes in, by what the directory holds:
//!
//! * a run (`summary.json`): the summary, per-thread instructions, IPC, sync share and group,
//!   the per-thread cycle stacks (absolute and normalised) and the aggregated stacks of the
//!   threads doing real work, overall and per thread group;
//! * a sweep (`sweep-args.json`): its arguments, `scaling.svg`, a PCA and dendrogram over its
//!   runs, and every run's section, folded;
//! * always: every table found under a top-level `"report_tables"` key of the directory's JSON
//!   files (`sweep.json`, `pca.json`, `lime.json`, `parashare.json`, `profile-*.json`, … — the
//!   report needs to know nothing about the analysis that wrote them), and every other SVG chart
//!   in the directory, inlined unless it holds scripts or links.
//!
//! All text from files is HTML-escaped. Output is deterministic (no dates).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use accounting::pca::{PcaError, PcaOptions};
use accounting::render::{self, stacked_bars_svg, xml_escape as esc};
use accounting::scaling::{does_real_work, sync_share};
use accounting::table::ReportTable;
use anyhow::{Context, Result, bail};
use clap::Args;
use sim_core::Component;

use crate::dirs::run;
use crate::dirs::sweep::{SCALING_SVG, SweepFile, is_sweep_dir};
use crate::fsutil::write_atomic;
use crate::stacks::{self, RunStacks};

/// `isim report` arguments.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// A run, sweep or PCA directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// HTML file to write (default: DIR/report.html).
    #[arg(long = "out", short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

const CSS: &str = "\
body{font-family:sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;border-bottom:2px solid #1f4e79;padding-bottom:.2em}
h2{font-size:1.3em;margin-top:1.6em;color:#1f4e79}
h3{font-size:1.1em;margin-top:1.2em}
table{border-collapse:collapse;font-size:.9em}
caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
th{background:#eef3f8}
tr:nth-child(even) td{background:#fafafa}
.chart,.table{overflow-x:auto;margin:.6em 0 1.2em}
.chart svg{display:block}
.note{color:#555;font-size:.9em}
.warning{color:#8a4b00}
details{margin:.4em 0;border:1px solid #ddd;padding:.3em .8em}
summary{cursor:pointer;font-weight:bold}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}
dl.kv dt{font-weight:bold}
dl.kv dd{margin:0}
";

/// Files whose JSON is large and never holds report tables.
const SKIP_JSON: &[&str] = &[run::ATTRIBUTION, run::SECTIONS, run::SUMMARY];

/// Builds the report of `dir`.
pub fn render(dir: &Path) -> Result<String> {
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    let is_run = dir.join(run::SUMMARY).is_file();
    let is_sweep = is_sweep_dir(dir);
    let has_tables = !json_files(dir)?.is_empty();
    let has_svg = !svg_files(dir)?.is_empty();
    if !is_run && !is_sweep && !has_tables && !has_svg {
        bail!(
            "{}: nothing to report (no summary.json, sweep, analysis JSON or charts)",
            dir.display()
        );
    }
    let kind = if is_sweep {
        "sweep"
    } else if is_run {
        "run"
    } else {
        "analysis"
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>isim {kind} report: {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&name)
    );
    let _ = writeln!(h, "<h1>isim {kind} report: {}</h1>", esc(&name));
    let _ = writeln!(
        h,
        "<p class=\"note\">Directory <code>{}</code>; written by isim {}.</p>",
        esc(&dir.display().to_string()),
        env!("CARGO_PKG_VERSION")
    );
    let mut shown_svgs: Vec<String> = vec!["cycle-stacks.svg".into()];
    // A sweep's `sweep.json` and runs, each read once for every section that shows them.
    let sweep = if is_sweep {
        let file = SweepFile::open(dir)?;
        let runs: Vec<RunStacks> = file
            .runs
            .iter()
            .map(|r| stacks::load(&dir.join(&r.dir)))
            .collect::<Result<_>>()?;
        Some((file, runs))
    } else {
        None
    };
    if let Some((file, runs)) = &sweep {
        sweep_section(&mut h, dir, file, runs)?;
        shown_svgs.push(SCALING_SVG.into());
    }
    if is_run {
        let run = stacks::load(dir)?;
        run_section(&mut h, &run, 2);
    }
    other_charts(&mut h, dir, &shown_svgs, 2)?;
    tables_section(&mut h, dir, 2)?;
    if let Some((file, runs)) = &sweep {
        let _ = writeln!(h, "<h2>Runs</h2>");
        for (r, run) in file.runs.iter().zip(runs) {
            let rd = dir.join(&r.dir);
            let _ = writeln!(
                h,
                "<details><summary>{} — {} cores, {} cycles</summary>",
                esc(&r.id),
                r.cores,
                thousands(run.cycles)
            );
            run_section(&mut h, run, 3);
            other_charts(&mut h, &rd, &["cycle-stacks.svg".into()], 3)?;
            tables_section(&mut h, &rd, 3)?;
            h.push_str("</details>\n");
        }
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

/// `isim report` on the command line.
pub fn cli(args: &ReportArgs) -> Result<()> {
    let html = render(&args.dir)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.dir.join("report.html"));
    write_atomic(&out, html.as_bytes())?;
    println!("wrote {} ({} bytes)", out.display(), html.len());
    Ok(())
}

/// The sweep's arguments, scaling chart and a PCA over its runs (`runs`: the runs of `s`, in
/// its order).
fn sweep_section(h: &mut String, dir: &Path, s: &SweepFile, runs: &[RunStacks]) -> Result<()> {
    let _ = writeln!(h, "<h2>Sweep: {}</h2>", esc(&s.workload));
    let mut cores: Vec<u32> = s.runs.iter().map(|r| r.cores).collect();
    cores.sort_unstable();
    cores.dedup();
    let mut sizes: Vec<u64> = s.runs.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut configs: Vec<&str> = s.runs.iter().map(|r| r.config.as_str()).collect();
    configs.dedup();
    let list = |v: Vec<String>| v.join(", ");
    kv(
        h,
        &[
            ("workload", s.workload.clone()),
            ("runs", s.runs.len().to_string()),
            (
                "core counts",
                list(cores.iter().map(|c| c.to_string()).collect()),
            ),
            ("sizes", list(sizes.iter().map(|c| c.to_string()).collect())),
            (
                "configs",
                list(configs.iter().map(|c| c.to_string()).collect()),
            ),
        ],
    );
    if let Some(svg) = read_svg(&dir.join(SCALING_SVG))? {
        let _ = writeln!(h, "<h3>Normalised cycle stacks per core count</h3>");
        chart(h, &svg);
    }
    match pca_of_sweep(s, runs) {
        Ok(Some(a)) => {
            let _ = writeln!(h, "<h3>PCA over the sweep's runs</h3>");
            chart(h, &a.scatter_svg());
            chart(h, &a.dendrogram_svg());
            for t in a.tables() {
                table(h, &t);
            }
        }
        Ok(None) => {
            let _ = writeln!(
                h,
                "<p class=\"note\">PCA needs at least two runs whose stacks differ.</p>"
            );
        }
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"warning\">PCA over the sweep's runs is not available: {}</p>",
                esc(&format!("{e:#}"))
            );
        }
    }
    Ok(())
}

fn pca_of_sweep(s: &SweepFile, runs: &[RunStacks]) -> Result<Option<crate::pca::Analysis>> {
    let rows = crate::pca::sweep_rows(s, runs);
    if rows.len() < 2 {
        return Ok(None);
    }
    match crate::pca::Analysis::of(rows, PcaOptions::default(), 0.9) {
        Ok(a) => Ok(Some(a)),
        Err(e) if matches!(e.downcast_ref(), Some(PcaError::NoVariance)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn run_section(h: &mut String, run: &RunStacks, level: u8) {
    let hn = format!("h{level}");
    let _ = writeln!(h, "<{hn}>Run: {}</{hn}>", esc(&run.workload));
    let ipc = if run.cycles > 0.0 {
        run.instructions as f64 / run.cycles
    } else {
        0.0
    };
    let mut rows = vec![("workload", run.workload.clone())];
    for (k, v) in &run.params {
        rows.push((k.as_str(), v.clone()));
    }
    rows.extend([
        ("cores", format!("{} ({} sockets)", run.cores, run.sockets)),
        (
            "frequency",
            format!("{:.2} GHz", run.frequency_hz as f64 / 1e9),
        ),
        ("cycles", thousands(run.cycles)),
        ("instructions", thousands(run.instructions as f64)),
        ("aggregate IPC", format!("{ipc:.2}")),
    ]);
    kv(h, &rows);

    let mut t = ReportTable::new(
        "Threads",
        &[
            "thread",
            "group",
            "instructions",
            "IPC",
            "sync + imbalance %",
            "real work",
        ],
    );
    for th in &run.threads {
        t.rows.push(vec![
            th.thread.to_string(),
            th.group.clone(),
            thousands(th.instructions as f64),
            format!(
                "{:.2}",
                if th.cycles > 0.0 {
                    th.instructions as f64 / th.cycles
                } else {
                    0.0
                }
            ),
            format!("{:.1}", 100.0 * sync_share(&th.stack)),
            if does_real_work(&th.stack) {
                "yes"
            } else {
                "no"
            }
            .into(),
        ]);
    }
    table(h, &t);

    let values: Vec<(String, Vec<f64>)> = run
        .threads
        .iter()
        .map(|t| (format!("thread {}", t.thread), t.stack.0.to_vec()))
        .collect();
    let bars = render::bars(&values);
    chart(
        h,
        &stacked_bars_svg(
            &format!("Cycle stacks per thread: {}", run.workload),
            &Component::NAMES,
            &bars,
            false,
        ),
    );
    chart(
        h,
        &stacked_bars_svg(
            "Normalised cycle stacks per thread",
            &Component::NAMES,
            &bars,
            true,
        ),
    );
    let a = &run.aggregate;
    let mut agg: Vec<(String, Vec<f64>)> = vec![(
        format!("all working ({})", a.overall.threads.len()),
        a.overall.stack.0.to_vec(),
    )];
    if a.groups.len() > 1 {
        for g in a.working_groups() {
            agg.push((
                format!("{} ({})", g.name, g.aggregate.threads.len()),
                g.aggregate.stack.0.to_vec(),
            ));
        }
    }
    let bars = render::bars(&agg);
    chart(
        h,
        &stacked_bars_svg(
            "Aggregated stack of threads doing real work (≤ 50 % sync), overall and per group",
            &Component::NAMES,
            &bars,
            true,
        ),
    );
    if a.overall.no_real_work {
        let _ = writeln!(
            h,
            "<p class=\"note\">No thread spends at most half of its cycles outside \
             synchronization; the aggregate sums every thread.</p>"
        );
    }
}

/// JSON files of `dir` that may hold report tables, sorted by name.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "json")
                && !p
                    .file_name()
                    .is_some_and(|n| SKIP_JSON.iter().any(|s| n == *s))
        })
        .collect();
    v.sort();
    Ok(v)
}

fn svg_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "svg"))
        .collect();
    v.sort();
    Ok(v)
}

/// The `report_tables` of a JSON file: `None` if it has none, an error if they are malformed.
fn report_tables(path: &Path) -> Result<Option<Vec<ReportTable>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let Some(t) = v.get("report_tables") else {
        return Ok(None);
    };
    let tables: Vec<ReportTable> = serde_json::from_value(t.clone()).with_context(|| {
        format!(
            "{}: report_tables is not a list of {{title, columns, rows}}",
            path.display()
        )
    })?;
    Ok(Some(tables))
}

fn tables_section(h: &mut String, dir: &Path, level: u8) -> Result<()> {
    let hn = format!("h{level}");
    for f in json_files(dir)? {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match report_tables(&f) {
            Ok(None) => {}
            Ok(Some(tables)) => {
                let _ = writeln!(h, "<{hn}>Tables from {}</{hn}>", esc(&name));
                if tables.is_empty() {
                    let _ = writeln!(h, "<p class=\"note\">(no tables)</p>");
                }
                for t in &tables {
                    table(h, t);
                }
            }
            Err(e) => {
                let _ = writeln!(
                    h,
                    "<p class=\"warning\">Skipped {}: {}</p>",
                    esc(&name),
                    esc(&format!("{e:#}"))
                );
            }
        }
    }
    Ok(())
}

fn other_charts(h: &mut String, dir: &Path, shown: &[String], level: u8) -> Result<()> {
    let hn = format!("h{level}");
    for f in svg_files(dir)? {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if shown.contains(&name) {
            continue;
        }
        let _ = writeln!(h, "<{hn}>{}</{hn}>", esc(&name));
        match read_svg(&f) {
            Ok(Some(svg)) => chart(h, &svg),
            Ok(None) => {}
            Err(e) => {
                let _ = writeln!(h, "<p class=\"warning\">{}</p>", esc(&format!("{e:#}")));
            }
        }
    }
    Ok(())
}

/// An SVG file's markup, ready to inline: without the XML declaration. Files with scripts,
/// event handlers, links or foreign content are refused (they could run code or fetch).
fn read_svg(path: &Path) -> Result<Option<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let lower = text.to_ascii_lowercase();
    let banned = ["<script", "<foreignobject", "href", "javascript:"];
    let found = banned
        .iter()
        .find(|b| lower.contains(**b))
        .copied()
        .or_else(|| has_event_handler(&lower).then_some("on…="));
    if let Some(b) = found {
        bail!(
            "{}: not inlined: it contains `{b}` (scripts and links are not allowed in a report)",
            path.display()
        );
    }
    let start = text
        .find("<svg")
        .with_context(|| format!("{}: not an SVG", path.display()))?;
    Ok(Some(text[start..].to_string()))
}

/// Whether lower-cased markup has an event-handler attribute: whitespace, `on`, letters,
/// optional whitespace, `=`.
fn has_event_handler(lower: &str) -> bool {
    let b = lower.as_bytes();
    lower.match_indices("on").any(|(i, _)| {
        if i == 0 || !b[i - 1].is_ascii_whitespace() {
            return false;
        }
        let mut j = i + 2;
        let letters = j;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        if j == letters {
            return false;
        }
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j < b.len() && b[j] == b'='
    })
}

fn chart(h: &mut String, svg: &str) {
    let body = svg.find("<svg").map_or(svg, |i| &svg[i..]);
    let _ = writeln!(h, "<div class=\"chart\">\n{}</div>", body.trim_end());
}

fn table(h: &mut String, t: &ReportTable) {
    let ncol = t
        .rows
        .iter()
        .map(Vec::len)
        .chain([t.columns.len()])
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        h,
        "<div class=\"table\"><table>\n<caption>{}</caption>",
        esc(&t.title)
    );
    h.push_str("<thead><tr>");
    for j in 0..ncol {
        let _ = write!(
            h,
            "<th>{}</th>",
            esc(t.columns.get(j).map_or("", String::as_str))
        );
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        h.push_str("<tr>");
        for j in 0..ncol {
            let _ = write!(h, "<td>{}</td>", esc(r.get(j).map_or("", String::as_str)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n");
}

fn kv(h: &mut String, rows: &[(&str, String)]) {
    h.push_str("<dl class=\"kv\">\n");
    for (k, v) in rows {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    h.push_str("</dl>\n");
}

/// `v` rounded, with thousands separators.
fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_every_cell_and_pad_short_rows() {
        let t = ReportTable {
            title: "<b>t</b>".into(),
            columns: vec!["a&b".into(), "c".into()],
            rows: vec![vec!["<script>alert(1)</script>".into()], vec![]],
        };
        let mut h = String::new();
        table(&mut h, &t);
        assert!(!h.contains("<script") && !h.contains("<b>"));
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(h.contains("a&amp;b"));
        assert_eq!(h.matches("<td>").count(), 4);
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
    }

    #[test]
    fn svgs_with_scripts_or_links_are_not_inlined() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.svg");
        std::fs::write(
            &ok,
            "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><text>only one thing</text></svg>",
        )
        .unwrap();
        assert!(read_svg(&ok).unwrap().unwrap().starts_with("<svg"));
        for bad in [
            "<svg><script>x()</script></svg>",
            "<svg><image href=\"http://x/y.png\"/></svg>",
            "<svg onload=\"x()\"></svg>",
            "<svg><foreignObject/></svg>",
        ] {
            let p = dir.path().join("bad.svg");
            std::fs::write(&p, bad).unwrap();
            assert!(read_svg(&p).is_err(), "{bad}");
        }
        assert!(read_svg(&dir.path().join("none.svg")).unwrap().is_none());
    }
}
