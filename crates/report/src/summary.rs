//! [`Summary`]: a small markdown builder for an experiment's `summary.md`.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One "paper vs. measured" line of a summary's comparison table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What is compared, e.g. "storage cost of SiP at α = 0.10".
    pub quantity: String,
    /// The paper's number as printed there (text, since papers write "about 19 %").
    pub paper: String,
    /// The measured value, formatted by the caller with its unit.
    pub measured: String,
    /// Whether the measured value bears the paper out.
    pub verdict: Verdict,
    /// Free-text remark: how close, and why it differs.
    pub note: String,
}

/// How a measured value stands against the paper's, in a comparison
/// table's `verdict` column. Experiments decide it from their data where the
/// paper gives a number or a direction to check against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// The paper's number (within the stated tolerance) or trend holds.
    Reproduces,
    /// The direction holds, the magnitude does not (or only some points agree).
    Partly,
    /// The measured value contradicts the paper.
    Differs,
    /// Nothing to check against: the paper gives no number, or the set-up
    /// differs too much for the numbers to be compared.
    NotComparable,
}

/// The factor within which a measured ratio reproduces the paper's.
const RATIO_TOLERANCE: f64 = 1.5;

impl Verdict {
    /// Every verdict, in the order a scoreboard totals them.
    pub const ALL: [Verdict; 4] = [Verdict::Reproduces, Verdict::Partly, Verdict::Differs, Verdict::NotComparable];

    /// `Reproduces` when `holds`, else `Differs`.
    #[must_use]
    pub fn holds(holds: bool) -> Self {
        if holds {
            Verdict::Reproduces
        } else {
            Verdict::Differs
        }
    }

    /// A ratio the paper reports against the measured one: within a factor
    /// of 1.5 reproduces; on the same side of 1 (the same direction) is
    /// partly; the other side differs. `None` or not finite: not comparable.
    #[must_use]
    pub fn of_ratio(paper: f64, measured: Option<f64>) -> Self {
        match measured.filter(|value| value.is_finite()) {
            None => Verdict::NotComparable,
            Some(value) if value >= paper / RATIO_TOLERANCE && value <= paper * RATIO_TOLERANCE => Verdict::Reproduces,
            Some(value) if (value > 1.0) == (paper > 1.0) => Verdict::Partly,
            Some(_) => Verdict::Differs,
        }
    }

    /// [`Verdict::of_ratio`] for a ratio measured over several runs, as
    /// (median, lowest, highest). Against a paper's effect (a ratio beyond
    /// the tolerance of 1), a range that reaches both sides of 1 shows no
    /// direction, so it differs whatever the median says.
    #[must_use]
    pub fn of_ratio_range(paper: f64, measured: Option<(f64, f64, f64)>) -> Self {
        let claims_an_effect = !(1.0 / RATIO_TOLERANCE..=RATIO_TOLERANCE).contains(&paper);
        match measured {
            Some((_, low, high)) if claims_an_effect && (low..=high).contains(&1.0) => Verdict::Differs,
            _ => Self::of_ratio(paper, measured.map(|(median, _, _)| median)),
        }
    }

    /// A value within `tolerance` of the paper's reproduces, else differs;
    /// `None` or not finite: not comparable.
    #[must_use]
    pub fn near(paper: f64, measured: Option<f64>, tolerance: f64) -> Self {
        match measured.filter(|value| value.is_finite()) {
            None => Verdict::NotComparable,
            Some(value) => Verdict::holds((value - paper).abs() <= tolerance),
        }
    }

    /// Several checks of one comparison: the worst of them (not comparable
    /// ones ignored, unless all are).
    #[must_use]
    pub fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Self {
        let rank = |verdict: Verdict| match verdict {
            Verdict::NotComparable => 0,
            Verdict::Reproduces => 1,
            Verdict::Partly => 2,
            Verdict::Differs => 3,
        };
        verdicts.into_iter().max_by_key(|verdict| rank(*verdict)).unwrap_or(Verdict::NotComparable)
    }

    /// The table cell.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Reproduces => "reproduces",
            Verdict::Partly => "partly",
            Verdict::Differs => "does not reproduce",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// A markdown document built block by block; blocks are separated by blank lines.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    blocks: Vec<String>,
    /// Every row given to [`Summary::comparisons`], written beside the
    /// markdown as `comparisons.json` for a combined report's scoreboard.
    compared: Vec<Comparison>,
}

impl Summary {
    /// Starts a summary with a level-1 title.
    #[must_use]
    pub fn new(title: &str) -> Self {
        Self { blocks: vec![format!("# {title}")], compared: Vec::new() }
    }

    /// Adds a level-2 heading.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        self.blocks.push(format!("## {text}"));
        self
    }

    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        self.blocks.push(text.trim().to_owned());
        self
    }

    /// Adds a bulleted list.
    pub fn bullets<S: AsRef<str>>(&mut self, items: &[S]) -> &mut Self {
        let list: Vec<String> = items.iter().map(|item| format!("- {}", item.as_ref())).collect();
        self.blocks.push(list.join("\n"));
        self
    }

    /// Adds a fenced code block (e.g. the command that reproduces the run).
    pub fn code(&mut self, language: &str, text: &str) -> &mut Self {
        self.blocks.push(format!("```{language}\n{}\n```", text.trim_end()));
        self
    }

    /// Adds a table; every row should have `header.len()` cells.
    pub fn table<S: AsRef<str>>(&mut self, header: &[&str], rows: &[Vec<S>]) -> &mut Self {
        let mut text = String::new();
        let _ = writeln!(text, "| {} |", header.join(" | "));
        let _ = writeln!(text, "|{}", "---|".repeat(header.len()));
        for row in rows {
            let cells: Vec<String> = row.iter().map(|cell| escape_cell(cell.as_ref())).collect();
            let _ = writeln!(text, "| {} |", cells.join(" | "));
        }
        self.blocks.push(text.trim_end().to_owned());
        self
    }

    /// Adds a "quantity | paper | nandlab | verdict | note" table.
    pub fn comparisons(&mut self, rows: &[Comparison]) -> &mut Self {
        self.compared.extend_from_slice(rows);
        let cells: Vec<Vec<&str>> = rows
            .iter()
            .map(|row| {
                vec![
                    row.quantity.as_str(),
                    row.paper.as_str(),
                    row.measured.as_str(),
                    row.verdict.label(),
                    row.note.as_str(),
                ]
            })
            .collect();
        self.table(&["quantity", "paper", "nandlab", "verdict", "note"], &cells)
    }

    /// The rows every [`Summary::comparisons`] call added, in order.
    #[must_use]
    pub fn compared(&self) -> &[Comparison] {
        &self.compared
    }

    /// Adds the scoreboard a combined report opens with: the totals per
    /// verdict over every experiment's comparison rows, then the rows
    /// themselves (experiment, quantity, paper, nandlab, verdict), so a reader
    /// sees at a glance where nandlab stands. `experiments` pairs each
    /// experiment's name with its rows (its `comparisons.json`); `not_run`
    /// names the experiments that failed, which the totals leave out and the
    /// opening sentence says so (a failed capture must not read as a
    /// smaller, cleaner scoreboard).
    pub fn scoreboard(&mut self, experiments: &[(String, Vec<Comparison>)], not_run: &[&str]) -> &mut Self {
        let rows: Vec<(&str, &Comparison)> =
            experiments.iter().flat_map(|(name, rows)| rows.iter().map(move |row| (name.as_str(), row))).collect();
        let count = |verdict: Verdict| rows.iter().filter(|(_, row)| row.verdict == verdict).count();
        let totals: Vec<String> = Verdict::ALL.iter().map(|&v| format!("{} {}", count(v), v.label())).collect();
        let missing = if not_run.is_empty() {
            String::new()
        } else {
            format!(" **Not in the totals: {} did not run** (\"Experiments\" says why).", not_run.join(", "))
        };
        self.heading("Scoreboard").paragraph(&format!(
            "**{} claims of the papers: {}.**{missing} Verdict rules: docs/reporting.md, \"Verdicts\".",
            rows.len(),
            totals.join(", ")
        ));
        let total_rows: Vec<Vec<String>> =
            Verdict::ALL.iter().map(|&v| vec![v.label().to_owned(), count(v).to_string()]).collect();
        self.table(&["verdict", "claims"], &total_rows);
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|(name, row)| {
                vec![
                    format!("[{name}](#{name})"),
                    row.quantity.clone(),
                    row.paper.clone(),
                    row.measured.clone(),
                    row.verdict.label().to_owned(),
                ]
            })
            .collect();
        self.table(&["experiment", "claim", "paper", "nandlab", "verdict"], &cells)
    }

    /// Embeds an image written into the same folder (e.g. an SVG chart).
    pub fn image(&mut self, alt: &str, file_name: &str) -> &mut Self {
        self.blocks.push(format!("![{alt}]({file_name})"));
        self
    }

    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut text = self.blocks.join("\n\n");
        text.push('\n');
        text
    }
}

/// An experiment's `summary.md` as a section of a combined report one folder
/// up: headings one level deeper, and links to files (plots, CSV) prefixed
/// with `folder/`; absolute links (`http…`, `/…`, `#…`) stay as they are.
#[must_use]
pub fn nest_summary(markdown: &str, folder: &str) -> String {
    let mut nested = String::with_capacity(markdown.len() + 64);
    let mut in_code = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            nested.push('#');
        }
        nested.push_str(&if in_code { line.to_owned() } else { prefix_links(line, folder) });
        nested.push('\n');
    }
    nested
}

fn prefix_links(line: &str, folder: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        let relative = !(after.starts_with("http") || after.starts_with('/') || after.starts_with('#'));
        if relative {
            out.push_str(folder);
            out.push('/');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn escape_cell(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_papers_numbers() {
        assert_eq!(Verdict::of_ratio(3.2, Some(2.5)), Verdict::Reproduces);
        assert_eq!(Verdict::of_ratio(3.2, Some(2.0)), Verdict::Partly);
        assert_eq!(Verdict::of_ratio(1322.0, Some(3.0)), Verdict::Partly);
        assert_eq!(Verdict::of_ratio(709.0, Some(0.9)), Verdict::Differs);
        assert_eq!(Verdict::of_ratio(0.33, Some(0.45)), Verdict::Reproduces);
        assert_eq!(Verdict::of_ratio(0.33, Some(0.56)), Verdict::Partly);
        assert_eq!(Verdict::of_ratio(0.33, None), Verdict::NotComparable);
        assert_eq!(Verdict::of_ratio_range(709.0, Some((1.01, 0.99, 1.02))), Verdict::Differs);
        assert_eq!(Verdict::of_ratio_range(709.0, Some((1.06, 1.04, 1.09))), Verdict::Partly);
        assert_eq!(Verdict::of_ratio_range(3.2, Some((2.5, 0.9, 4.0))), Verdict::Differs);
        assert_eq!(Verdict::of_ratio_range(1.0, Some((1.01, 0.99, 1.02))), Verdict::Reproduces);
        assert_eq!(Verdict::of_ratio_range(0.33, Some((0.4, 0.3, 0.5))), Verdict::Reproduces);
        assert_eq!(Verdict::of_ratio_range(0.33, None), Verdict::NotComparable);
        assert_eq!(Verdict::near(83.0, Some(86.0), 5.0), Verdict::Reproduces);
        assert_eq!(Verdict::near(83.0, Some(70.0), 5.0), Verdict::Differs);
        assert_eq!(Verdict::worst([Verdict::Reproduces, Verdict::Partly]), Verdict::Partly);
        assert_eq!(Verdict::worst([Verdict::NotComparable, Verdict::Reproduces]), Verdict::Reproduces);
        assert_eq!(Verdict::worst([]), Verdict::NotComparable);
        let mut summary = Summary::new("t");
        summary.comparisons(&[Comparison {
            quantity: "q".into(),
            paper: "p".into(),
            measured: "m".into(),
            verdict: Verdict::Partly,
            note: "n".into(),
        }]);
        let markdown = summary.to_markdown();
        assert!(markdown.contains("| quantity | paper | nandlab | verdict | note |"), "{markdown}");
        assert!(markdown.contains("| q | p | m | partly | n |"), "{markdown}");
    }

    #[test]
    fn nested_summaries_deepen_headings_and_prefix_relative_links() {
        let text = "# Title\n\n![plot](a.svg) and [data](a.csv), [paper](https://x.org) [up](/abs)\n\n```sh\n# a comment\n```\n";
        let nested = nest_summary(text, "exp");
        assert_eq!(
            nested,
            "## Title\n\n![plot](exp/a.svg) and [data](exp/a.csv), [paper](https://x.org) [up](/abs)\n\n```sh\n# a comment\n```\n"
        );
    }

    #[test]
    fn tables_escape_pipes_and_keep_columns() {
        let mut summary = Summary::new("T");
        summary.table(&["a", "b"], &[vec!["x|y", "z"]]);
        let text = summary.to_markdown();
        assert!(text.contains("| a | b |\n|---|---|\n| x\\|y | z |"), "{text}");
    }
}
