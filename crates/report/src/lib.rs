//! `nandlab-report`: the one reporting path of nandlab. Every experiment writes
//! its results through this crate into one output folder:
//!
//! - [`OutputDir`] creates the folder and writes CSV (header from the row type's
//!   serde field names), pretty JSON and markdown files into it;
//! - [`Summary`] builds the `summary.md` (headings, paragraphs, tables, embedded
//!   plots, paper-vs-measured comparisons);
//! - [`markdown_to_html`] turns a summary (or a combined report) into one
//!   self-contained HTML page with its SVG plots inline;
//! - [`Table`] holds rows as typed columns and writes them as Apache Parquet;
//! - [`Chart`] draws SVG charts with `plotters` (SVG backend only, so no system
//!   font libraries are needed): line plots with several named series, scatter,
//!   step and CDF plots, linear or log axes, and grouped bars ([`BarChart`]),
//!   with error bars where there are repeats and the paper's numbers drawn as
//!   black references ([`Reference`], [`BarReference`]).
//!
//! The crate is generic: it knows nothing about any particular paper.
//! `docs/reporting.md` documents the API.
//!
//! ```
//! use nandlab_report::{Axis, Chart, Comparison, Mark, OutputDir, Reference, Series, Summary, Verdict};
//!
//! #[derive(serde::Serialize)]
//! struct Row {
//!     granularity: u64,
//!     throughput_percent: f64,
//! }
//!
//! let rows = [Row { granularity: 1, throughput_percent: 1.0 }, Row { granularity: 64, throughput_percent: 86.0 }];
//! let dir = OutputDir::create(std::env::temp_dir().join("nandlab-report-doctest"))?;
//! dir.write_csv("throughput.csv", &rows)?;
//! let points = rows.iter().map(|row| (row.granularity as f64, row.throughput_percent)).collect();
//! let chart = Chart::new("Throughput vs granularity", Axis::new("granularity").unit("pages").log(), Axis::new("throughput").unit("%"))
//!     .with(Series::new("measured", Mark::LinePoints, points))
//!     .reference(Reference::points("paper, Fig. 7", vec![(1.0, 2.0), (64.0, 83.0)]));
//! dir.write_chart("throughput.svg", &chart)?;
//! let mut summary = Summary::new("Throughput vs granularity");
//! summary
//!     .paragraph("What was run, on which device, with which seed.")
//!     .image("throughput", "throughput.svg")
//!     .comparisons(&[Comparison {
//!         quantity: "throughput at g = 64".into(),
//!         paper: "83 %".into(),
//!         measured: "86 %".into(),
//!         verdict: Verdict::Reproduces,
//!         note: "why it differs".into(),
//!     }]);
//! let path = dir.write_summary(&summary)?;
//! assert!(std::fs::read_to_string(path)?.contains("| throughput at g = 64 | 83 % | 86 % | reproduces | why it differs |"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chart;
mod error;
mod html;
mod output;
mod summary;
mod table;

pub use chart::{
    tick_label, wrap, Axis, BarChart, BarReference, BarSeries, Chart, Mark, Reference, ReferenceShape, Scale, Series,
};
pub use error::ReportError;
pub use html::markdown_to_html;
pub use output::OutputDir;
pub use summary::{nest_summary, Comparison, Summary, Verdict};
pub use table::{Column, Table};
