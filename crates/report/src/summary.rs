//! [`Summary`]: a small markdown builder for an experiment's `summary.md`.

use std::fmt::Write as _;

/// One "paper vs. measured" line of a summary's comparison table.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// What is compared, e.g. "storage cost of SiP at α = 0.10".
    pub quantity: String,
    /// The paper's number as printed there (text, since papers write "about 19 %").
    pub paper: String,
    /// The measured value, formatted by the caller with its unit.
    pub measured: String,
    /// Free-text remark: how close, and why it differs.
    pub note: String,
}

/// A markdown document built block by block; blocks are separated by blank lines.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    blocks: Vec<String>,
}

impl Summary {
    /// Starts a summary with a level-1 title.
    #[must_use]
    pub fn new(title: &str) -> Self {
        Self { blocks: vec![format!("# {title}")] }
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

    /// Adds a "quantity | paper | measured | note" table.
    pub fn comparisons(&mut self, rows: &[Comparison]) -> &mut Self {
        let cells: Vec<Vec<&str>> = rows
            .iter()
            .map(|row| vec![row.quantity.as_str(), row.paper.as_str(), row.measured.as_str(), row.note.as_str()])
            .collect();
        self.table(&["quantity", "paper", "nandlab", "note"], &cells)
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

fn escape_cell(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_pipes_and_keep_columns() {
        let mut summary = Summary::new("T");
        summary.table(&["a", "b"], &[vec!["x|y", "z"]]);
        let text = summary.to_markdown();
        assert!(text.contains("| a | b |\n|---|---|\n| x\\|y | z |"), "{text}");
    }
}
