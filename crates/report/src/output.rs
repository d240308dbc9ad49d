//! [`OutputDir`]: one experiment's output folder and the files written into it.

use crate::chart::Chart;
use crate::summary::Summary;
use crate::{BarChart, ReportError};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// An output folder. Every writer takes a plain file name (no folders) and
/// returns the full path it wrote, so callers can print or link it.
#[derive(Debug, Clone)]
pub struct OutputDir {
    root: PathBuf,
}

impl OutputDir {
    /// Creates the folder (and its parents) if missing. Existing files with the
    /// same names are replaced by later writes, whole and keeping their mode.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self, ReportError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|cause| ReportError::CreateDir { path: root.clone(), cause })?;
        Ok(Self { root })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Writes `rows` as CSV; the header is the serde field names of `R`
    /// (a struct with scalar fields). An empty `rows` writes an empty file.
    pub fn write_csv<R: Serialize>(&self, name: &str, rows: &[R]) -> Result<PathBuf, ReportError> {
        let path = self.file(name)?;
        let csv_error = |cause| ReportError::Csv { path: path.clone(), cause };
        let mut writer = csv::Writer::from_writer(Vec::new());
        for row in rows {
            writer.serialize(row).map_err(csv_error)?;
        }
        let bytes = writer.into_inner().map_err(|error| csv_error(error.into_error().into()))?;
        Self::write_bytes(path, &bytes)
    }

    /// Writes `value` as pretty-printed JSON.
    pub fn write_json<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<PathBuf, ReportError> {
        let path = self.file(name)?;
        let mut text =
            serde_json::to_string_pretty(value).map_err(|cause| ReportError::Json { path: path.clone(), cause })?;
        text.push('\n');
        self.write_text(name, &text)
    }

    /// Writes `summary` as `summary.md`, and its comparison rows (if any) as
    /// `comparisons.json`, which a combined report's scoreboard reads.
    pub fn write_summary(&self, summary: &Summary) -> Result<PathBuf, ReportError> {
        if !summary.compared().is_empty() {
            self.write_json("comparisons.json", &summary.compared())?;
        }
        self.write_text("summary.md", &summary.to_markdown())
    }

    /// Writes `markdown` as the self-contained HTML page `name`, its SVG
    /// plots (files of this folder) inlined.
    pub fn write_html(&self, name: &str, title: &str, markdown: &str) -> Result<PathBuf, ReportError> {
        self.write_text(name, &crate::markdown_to_html(title, markdown, &self.root))
    }

    /// Draws `chart` into the SVG file `name`.
    pub fn write_chart(&self, name: &str, chart: &Chart) -> Result<PathBuf, ReportError> {
        let svg = chart.to_svg(name)?;
        self.write_text(name, &svg)
    }

    /// Draws `chart` into the SVG file `name`.
    pub fn write_bar_chart(&self, name: &str, chart: &BarChart) -> Result<PathBuf, ReportError> {
        let svg = chart.to_svg(name)?;
        self.write_text(name, &svg)
    }

    /// Writes any text file (markdown, TOML, …).
    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf, ReportError> {
        Self::write_bytes(self.file(name)?, text.as_bytes())
    }

    /// Writes through the one output path ([`nandlab_trace::write_output`]):
    /// a file is replaced whole, a device or FIFO written in place.
    fn write_bytes(path: PathBuf, bytes: &[u8]) -> Result<PathBuf, ReportError> {
        nandlab_trace::write_output(&path, bytes).map_err(|cause| ReportError::Write { path: path.clone(), cause })?;
        Ok(path)
    }

    fn file(&self, name: &str) -> Result<PathBuf, ReportError> {
        let plain = Path::new(name).file_name().is_some_and(|file| file == name);
        if !plain {
            return Err(ReportError::InvalidFileName { name: name.to_owned() });
        }
        Ok(self.root.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        granularity: u32,
        utilization_percent: f64,
    }

    #[test]
    fn csv_header_comes_from_field_names_and_names_must_be_plain() {
        let folder = std::env::temp_dir().join(format!("nandlab-report-test-{}", std::process::id()));
        let output = OutputDir::create(folder.join("nested")).expect("folder is created");
        let path =
            output.write_csv("rows.csv", &[Row { granularity: 4, utilization_percent: 83.5 }]).expect("csv is written");
        let text = std::fs::read_to_string(path).expect("csv is readable");
        assert_eq!(text, "granularity,utilization_percent\n4,83.5\n");
        assert!(matches!(output.write_text("../escape.md", "x"), Err(ReportError::InvalidFileName { .. })));
        assert!(matches!(output.write_text("", "x"), Err(ReportError::InvalidFileName { .. })));
        std::fs::remove_dir_all(folder).expect("cleanup");
    }
}
