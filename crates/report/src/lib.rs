//! `nandlab-report`: the one reporting path of nandlab. Every experiment writes
//! its results through this crate into one output folder:
//!
//! - [`OutputDir`] creates the folder and writes CSV (header from the row type's
//!   serde field names), pretty JSON and markdown files into it;
//! - [`Summary`] builds the `summary.md` (headings, paragraphs, tables, embedded
//!   plots, paper-vs-measured comparisons);
//! - [`Chart`] draws SVG charts with `plotters` (SVG backend only, so no system
//!   font libraries are needed): line plots with several named series, scatter,
//!   step and CDF plots, linear or log axes, and grouped bars ([`BarChart`]).
//!
//! The crate is generic: it knows nothing about any particular paper. See
//! `docs/reporting.md` for a worked example.

mod chart;
mod error;
mod output;
mod summary;

pub use chart::{Axis, BarChart, BarSeries, Chart, Legend, Mark, Scale, Series};
pub use error::ReportError;
pub use output::OutputDir;
pub use summary::{Comparison, Summary};
