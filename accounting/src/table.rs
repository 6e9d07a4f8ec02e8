//! Report tables: the plain `{title, columns, rows}` shape that every analysis writes under a
//! top-level `"report_tables"` key of its JSON output, so that `isim report` can render the
//! tables of analyses it knows nothing about. Cells are preformatted strings (the analysis
//! decides precision and units); this module renders them: aligned for a terminal, or as CSV.

use serde::{Deserialize, Serialize};

/// One table: a title, column headings and rows of preformatted cells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTable {
    /// What the table shows.
    pub title: String,
    /// Column headings.
    pub columns: Vec<String>,
    /// Rows; each should have one cell per column (short rows are padded when rendered).
    pub rows: Vec<Vec<String>>,
}

/// Serializes tables with each table's keys in alphabetical order (`columns`, `rows`,
/// `title`), as the files that were first written through `serde_json::json!` list them
/// (`pca.json`, `sweep.json`); for `#[serde(serialize_with = "...")]`. Reading needs nothing
/// special: key order does not matter to `Deserialize`.
pub fn serialize_sorted<S: serde::Serializer>(
    tables: &[ReportTable],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Sorted<'a> {
        columns: &'a [String],
        rows: &'a [Vec<String>],
        title: &'a str,
    }
    s.collect_seq(tables.iter().map(|t| Sorted {
        columns: &t.columns,
        rows: &t.rows,
        title: &t.title,
    }))
}

impl ReportTable {
    /// A table with `title` and `columns` and no rows yet.
    pub fn new(title: impl Into<String>, columns: &[&str]) -> ReportTable {
        ReportTable {
            title: title.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// The number of columns: the longest of the heading and the rows.
    fn width(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.columns.len()])
            .max()
            .unwrap_or(0)
    }

    /// The table with rows and columns swapped: the first column's cells become the headings
    /// (after the first heading), and every other column becomes a row led by its heading.
    /// Useful for wide tables on a terminal.
    pub fn transposed(&self) -> ReportTable {
        let cell = |r: &[String], j: usize| r.get(j).cloned().unwrap_or_default();
        let ncol = self.width();
        let mut columns = vec![cell(&self.columns, 0)];
        columns.extend(self.rows.iter().map(|r| cell(r, 0)));
        let rows = (1..ncol)
            .map(|j| {
                let mut r = vec![cell(&self.columns, j)];
                r.extend(self.rows.iter().map(|row| cell(row, j)));
                r
            })
            .collect();
        ReportTable {
            title: self.title.clone(),
            columns,
            rows,
        }
    }

    /// The table as aligned text for a terminal: the title, a header line, a rule and one line
    /// per row. The first column is left-aligned, the others right-aligned (they hold numbers).
    pub fn render_text(&self) -> String {
        let ncol = self.width();
        let cell = |r: &[String], j: usize| r.get(j).map(String::as_str).unwrap_or("").to_string();
        let mut width = vec![0usize; ncol];
        for r in std::iter::once(&self.columns).chain(&self.rows) {
            for (j, w) in width.iter_mut().enumerate() {
                *w = (*w).max(cell(r, j).chars().count());
            }
        }
        let line = |r: &[String]| {
            let mut s = String::new();
            for (j, &w) in width.iter().enumerate() {
                let c = cell(r, j);
                let pad = w - c.chars().count();
                if j > 0 {
                    s.push_str("  ");
                }
                if j == 0 {
                    s.push_str(&c);
                    s.extend(std::iter::repeat_n(' ', pad));
                } else {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(&c);
                }
            }
            s.truncate(s.trim_end().len());
            s.push('\n');
            s
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(&self.columns));
        let rule: usize = width.iter().sum::<usize>() + 2 * ncol.saturating_sub(1);
        out.push_str(&"-".repeat(rule));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }

    /// The table as CSV (RFC 4180): a header record of the column headings, then one record
    /// per row, every record as wide as the widest (short ones padded with empty fields),
    /// records ended by CRLF. A field holding a comma, a double quote, CR or LF is quoted, its
    /// double quotes doubled. The title is not part of the CSV.
    pub fn render_csv(&self) -> String {
        let ncol = self.width();
        let mut out = String::new();
        for r in std::iter::once(&self.columns).chain(&self.rows) {
            for j in 0..ncol {
                if j > 0 {
                    out.push(',');
                }
                let c = r.get(j).map_or("", String::as_str);
                if c.contains([',', '"', '\r', '\n']) {
                    out.push('"');
                    out.push_str(&c.replace('"', "\"\""));
                    out.push('"');
                } else {
                    out.push_str(c);
                }
            }
            out.push_str("\r\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_tables_align_columns_and_pad_short_rows() {
        let mut t = ReportTable::new("scaling", &["cores", "cycles"]);
        t.rows.push(vec!["1".into(), "305154".into()]);
        t.rows.push(vec!["16".into()]);
        assert_eq!(
            t.render_text(),
            "scaling\ncores  cycles\n-------------\n1      305154\n16\n"
        );
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"title":"scaling","columns":["cores","cycles"],"rows":[["1","305154"],["16"]]}"#
        );
        let back: ReportTable = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let tt = t.transposed();
        assert_eq!(tt.columns, ["cores", "1", "16"]);
        assert_eq!(tt.rows, [["cycles", "305154", ""]]);
        assert_eq!(tt.transposed().rows[0], t.rows[0]);
    }

    #[test]
    fn csv_quotes_only_what_needs_it_and_pads_short_rows() {
        let mut t = ReportTable::new("ignored title", &["name", "value, %"]);
        t.rows.push(vec!["say \"hi\"".into(), "1.5".into()]);
        t.rows.push(vec!["two\nlines".into()]);
        t.rows.push(vec!["a".into(), "b".into(), "extra".into()]);
        assert_eq!(
            t.render_csv(),
            "name,\"value, %\",\r\n\"say \"\"hi\"\"\",1.5,\r\n\"two\nlines\",,\r\na,b,extra\r\n"
        );
        assert_eq!(ReportTable::new("t", &[]).render_csv(), "\r\n");
    }
}
