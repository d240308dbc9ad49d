//! SVG charts drawn with `plotters` (SVG backend, no system fonts): [`Chart`]
//! for x/y plots (lines, dashed lines, scatter, steps, CDFs; linear or log
//! axes) and [`BarChart`] for grouped bars. Both render to an SVG string; the
//! [`crate::OutputDir`] writes it.
//!
//! Every chart is drawn the same way, so a fix here fixes every figure:
//! tick labels are short numbers ([`tick_label`]), the legend sits in a
//! column right of the plot where it can hide no data, series may carry
//! ranges drawn as error bars, and the paper's own numbers are drawn as black
//! [`Reference`] markers or lines with a legend entry of their own.

use crate::ReportError;
use nandlab_convert::{f64_of, saturating};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Default chart size in pixels.
const SIZE_DEFAULT: (u32, u32) = (900, 560);
/// Colours cycled through by the series of a chart (colour-blind friendly "tab10").
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
/// The paper's numbers are black, so they never read as one of nandlab's series.
const REFERENCE_COLOR: RGBColor = RGBColor(0, 0, 0);
/// Font size of legend entries and bar-group labels, in pixels.
const LABEL_FONT: u32 = 14;
/// Estimated width of one character at [`LABEL_FONT`] (plotters' SVG backend
/// measures text the same rough way), used to wrap labels before they collide.
const CHAR_WIDTH: f64 = 7.2;
/// Height of one legend or label line.
const LINE_HEIGHT: i32 = 18;
/// The legend column takes at most this share of the chart's width.
const LEGEND_MAX_SHARE: f64 = 0.34;
/// Length of a legend swatch and the gap after it.
const SWATCH: i32 = 22;

/// Linear or base-10 logarithmic axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// One axis: its label, unit, scale and (optionally) a fixed range.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub label: String,
    /// Printed in brackets after the label, e.g. "utilization [%]"; an empty unit prints nothing.
    pub unit: Option<String>,
    pub scale: Scale,
    /// Fixed `(low, high)`; when `None` the range is fitted to the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// The label of a tick at `value` on this axis drawn over `range`. A log
    /// axis spanning a decade or more labels only 1, 2 and 5 times a power
    /// of ten (its gridlines stay at every tick): plotters puts a tick at
    /// every multiple, whose labels run into each other towards the end of
    /// each decade (0.006 0.007 0.008 0.009 0.01).
    fn tick(&self, range: &std::ops::Range<f64>, value: f64) -> String {
        let thinned = self.scale == Scale::Log && range.end >= 10.0 * range.start;
        let mantissa = value / 10f64.powf(value.log10().floor());
        let round = [1.0, 2.0, 5.0, 10.0].iter().any(|m| (mantissa - m).abs() < 1e-6 * m);
        if thinned && !round {
            String::new()
        } else {
            tick_label(value)
        }
    }

    #[must_use]
    pub fn new(label: &str) -> Self {
        Self { label: label.to_owned(), unit: None, scale: Scale::Linear, range: None }
    }

    #[must_use]
    pub fn unit(mut self, unit: &str) -> Self {
        self.unit = Some(unit.to_owned());
        self
    }

    #[must_use]
    pub fn log(mut self) -> Self {
        self.scale = Scale::Log;
        self
    }

    #[must_use]
    pub fn range(mut self, low: f64, high: f64) -> Self {
        self.range = Some((low, high));
        self
    }

    fn caption(&self) -> String {
        match &self.unit {
            Some(unit) if !unit.is_empty() => format!("{} [{unit}]", self.label),
            _ => self.label.clone(),
        }
    }

    /// The drawn range: the fixed one, or the data's extent with a margin. A
    /// linear axis over non-negative data starts no lower than 0, and data
    /// that are all one value get a range around it (all zeros: 0 to 1), so
    /// a flat line is drawn on its own scale, not on −1..1.
    fn resolve(&self, values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
        if let Some(range) = self.range {
            return Some(range);
        }
        let (low, high) = values.filter(|value| self.accepts(*value)).fold(
            None,
            |extent: Option<(f64, f64)>, value| match extent {
                None => Some((value, value)),
                Some((low, high)) => Some((low.min(value), high.max(value))),
            },
        )?;
        Some(match self.scale {
            Scale::Log if low == high => (low / 10.0, high * 10.0),
            Scale::Log => (low / 1.5, high * 1.5),
            Scale::Linear if low == high && low == 0.0 => (0.0, 1.0),
            Scale::Linear if low == high => {
                let margin = low.abs() * 0.1;
                (if low > 0.0 { (low - margin).max(0.0) } else { low - margin }, high + margin)
            }
            Scale::Linear => {
                let margin = (high - low) * 0.05;
                let floor = if low >= 0.0 { 0.0 } else { f64::NEG_INFINITY };
                ((low - margin).max(floor), high + margin)
            }
        })
    }

    fn accepts(&self, value: f64) -> bool {
        value.is_finite() && (self.scale == Scale::Linear || value > 0.0)
    }
}

/// A tick label with at most four significant digits and no trailing zeros:
/// `0.009000000000000001` is printed `0.009`, `1500` stays `1500`, very large
/// or small magnitudes use an exponent (`2.5e-5`, `1.2e7`).
#[must_use]
pub fn tick_label(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value.is_finite() { "0".to_owned() } else { value.to_string() };
    }
    let magnitude = value.abs();
    if !(1e-4..1e7).contains(&magnitude) {
        let text = format!("{value:.3e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        return format!("{}e{exponent}", trim_zeros(mantissa));
    }
    let decimals: usize = saturating((3.0 - magnitude.log10().floor()).clamp(0.0, 8.0));
    let text = trim_zeros(&format!("{value:.decimals$}"));
    if text == "-0" {
        "0".to_owned()
    } else {
        text
    }
}

fn trim_zeros(number: &str) -> String {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        number.to_owned()
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Line,
    /// A dashed line, for estimates or non-guaranteed results.
    DashedLine,
    /// A line with a dot on every point.
    LinePoints,
    /// Dots only (scatter).
    Points,
    /// A staircase: each y holds until the next x (CDFs, step functions).
    Step,
}

/// A named series of `(x, y)` points, optionally with a `(low, high)` range
/// of y per point (the spread of repeated runs), drawn as error bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub mark: Mark,
    /// One `(low, high)` per point, or empty for none.
    pub ranges: Vec<(f64, f64)>,
}

impl Series {
    #[must_use]
    pub fn new(name: &str, mark: Mark, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.to_owned(), points, mark, ranges: Vec::new() }
    }

    #[must_use]
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, Mark::Line, points)
    }

    #[must_use]
    pub fn scatter(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, Mark::Points, points)
    }

    /// Error bars: the `(low, high)` of y at each point, e.g. the minimum and
    /// maximum over repeats; must have one range per point.
    #[must_use]
    pub fn ranges(mut self, ranges: Vec<(f64, f64)>) -> Self {
        self.ranges = ranges;
        self
    }

    /// The empirical CDF of `samples` (non-finite samples are dropped) as a
    /// step series: y is the fraction of samples ≤ x, from 0 to 1.
    #[must_use]
    pub fn cdf(name: &str, samples: &[f64]) -> Self {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|sample| sample.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let count = f64_of(sorted.len());
        let points = sorted.iter().enumerate().map(|(index, value)| (*value, f64_of(index + 1) / count)).collect();
        Self::new(name, Mark::Step, points)
    }

    /// The points actually drawn: a staircase for [`Mark::Step`].
    fn drawn_points(&self) -> Vec<(f64, f64)> {
        if self.mark != Mark::Step {
            return self.points.clone();
        }
        let mut stairs = Vec::with_capacity(self.points.len() * 2);
        for pair in self.points.windows(2) {
            stairs.push(pair[0]);
            stairs.push((pair[1].0, pair[0].1));
        }
        stairs.extend(self.points.last());
        stairs
    }

    /// Each point's error bar as `(x, low, high)`.
    fn error_bars(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.points.iter().zip(&self.ranges).map(|(&(x, _), &(low, high))| (x, low, high))
    }
}

/// What a paper reports, drawn on a chart in black with its own legend entry
/// (name it after the source: "paper, Fig. 7").
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub name: String,
    pub shape: ReferenceShape,
}

/// The form of a [`Reference`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReferenceShape {
    /// Values at given x: hollow diamonds joined by a dotted line when there are several.
    Points(Vec<(f64, f64)>),
    /// One value for every x: a dotted horizontal line.
    Horizontal(f64),
    /// A position on the x axis: a dotted vertical line.
    Vertical(f64),
}

impl Reference {
    #[must_use]
    pub fn points(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.to_owned(), shape: ReferenceShape::Points(points) }
    }

    #[must_use]
    pub fn horizontal(name: &str, y: f64) -> Self {
        Self { name: name.to_owned(), shape: ReferenceShape::Horizontal(y) }
    }

    #[must_use]
    pub fn vertical(name: &str, x: f64) -> Self {
        Self { name: name.to_owned(), shape: ReferenceShape::Vertical(x) }
    }

    fn xs(&self) -> Vec<f64> {
        match &self.shape {
            ReferenceShape::Points(points) => points.iter().map(|point| point.0).collect(),
            ReferenceShape::Horizontal(_) => Vec::new(),
            ReferenceShape::Vertical(x) => vec![*x],
        }
    }

    fn ys(&self) -> Vec<f64> {
        match &self.shape {
            ReferenceShape::Points(points) => points.iter().map(|point| point.1).collect(),
            ReferenceShape::Horizontal(y) => vec![*y],
            ReferenceShape::Vertical(_) => Vec::new(),
        }
    }
}

/// How a legend entry's swatch is drawn.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    Line(RGBColor, Mark),
    Bar(RGBColor),
    ReferencePoints,
    ReferenceLine,
}

/// The legend: a column right of the plot, wrapped to its width, so it never covers data.
struct Legend {
    entries: Vec<(Swatch, Vec<String>)>,
    width: u32,
}

impl Legend {
    fn new(entries: Vec<(Swatch, &str)>, chart_width: u32) -> Self {
        let named: Vec<(Swatch, &str)> = entries.into_iter().filter(|(_, name)| !name.is_empty()).collect();
        if named.is_empty() {
            return Self { entries: Vec::new(), width: 0 };
        }
        let longest = named.iter().map(|(_, name)| name.chars().count()).max().unwrap_or(0);
        let max_width = f64::from(chart_width) * LEGEND_MAX_SHARE;
        let wanted = f64_of(longest) * CHAR_WIDTH + f64::from(SWATCH) + 24.0;
        let width = wanted.min(max_width);
        let columns = saturating(((width - f64::from(SWATCH) - 24.0) / CHAR_WIDTH).max(8.0));
        let entries = named.into_iter().map(|(swatch, name)| (swatch, wrap(name, columns))).collect();
        Self { entries, width: saturating(width.ceil()) }
    }

    /// Splits `area` into the plot and the legend column, drawing the legend there.
    fn place<'a>(
        &self,
        area: &DrawingArea<SVGBackend<'a>, Shift>,
    ) -> Result<DrawingArea<SVGBackend<'a>, Shift>, String> {
        if self.entries.is_empty() {
            return Ok(area.clone());
        }
        let (total, _) = area.dim_in_pixel();
        let (plot, column) = area.split_horizontally(total.saturating_sub(self.width));
        let font = ("sans-serif", LABEL_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        let mut y = 2 * LINE_HEIGHT;
        for (swatch, lines) in &self.entries {
            draw_swatch(&column, *swatch, (6, y)).map_err(|error| error.to_string())?;
            for line in lines {
                column.draw(&Text::new(line.as_str(), (6 + SWATCH + 6, y), font.clone())).map_err(|e| e.to_string())?;
                y += LINE_HEIGHT;
            }
            y += LINE_HEIGHT / 3;
        }
        Ok(plot)
    }
}

fn draw_swatch<'a>(
    area: &DrawingArea<SVGBackend<'a>, Shift>,
    swatch: Swatch,
    (x, y): (i32, i32),
) -> Result<(), DrawingAreaErrorKind<<SVGBackend<'a> as DrawingBackend>::ErrorType>> {
    match swatch {
        Swatch::Line(color, Mark::Points) => area.draw(&Circle::new((x + SWATCH / 2, y), 4, color.filled())),
        Swatch::Line(color, Mark::DashedLine) => {
            area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2)))?;
            area.draw(&PathElement::new(vec![(x + 13, y), (x + SWATCH, y)], color.stroke_width(2)))
        }
        Swatch::Line(color, mark) => {
            area.draw(&PathElement::new(vec![(x, y), (x + SWATCH, y)], color.stroke_width(2)))?;
            if mark == Mark::LinePoints {
                area.draw(&Circle::new((x + SWATCH / 2, y), 3, color.filled()))?;
            }
            Ok(())
        }
        Swatch::Bar(color) => area.draw(&Rectangle::new([(x, y - 6), (x + SWATCH - 6, y + 6)], color.filled())),
        Swatch::ReferencePoints => area.draw(&diamond((x + SWATCH / 2, y))),
        Swatch::ReferenceLine => {
            for start in (0..SWATCH).step_by(6) {
                area.draw(&PathElement::new(
                    vec![(x + start, y), (x + start + 3, y)],
                    REFERENCE_COLOR.stroke_width(2),
                ))?;
            }
            Ok(())
        }
    }
}

/// A hollow black diamond centred on `at` (backend pixels).
fn diamond(at: (i32, i32)) -> PathElement<(i32, i32)> {
    let (x, y) = at;
    PathElement::new(vec![(x, y - 7), (x + 7, y), (x, y + 7), (x - 7, y), (x, y - 7)], REFERENCE_COLOR.stroke_width(2))
}

/// `text` broken at spaces into lines of at most `columns` characters (a
/// longer word keeps its own line); one empty line for empty text.
#[must_use]
pub fn wrap(text: &str, columns: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= columns => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

fn draw_error<E: std::fmt::Display>(error: E) -> String {
    error.to_string()
}

/// An x/y chart with any number of named series and paper references.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub references: Vec<Reference>,
    pub size: (u32, u32),
}

impl Chart {
    #[must_use]
    pub fn new(title: &str, x: Axis, y: Axis) -> Self {
        Self { title: title.to_owned(), x, y, series: Vec::new(), references: Vec::new(), size: SIZE_DEFAULT }
    }

    #[must_use]
    pub fn with(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Adds what the paper reports, drawn in black with a legend entry.
    #[must_use]
    pub fn reference(mut self, reference: Reference) -> Self {
        self.references.push(reference);
        self
    }

    pub fn push(&mut self, series: Series) -> &mut Self {
        self.series.push(series);
        self
    }

    pub fn push_reference(&mut self, reference: Reference) -> &mut Self {
        self.references.push(reference);
        self
    }

    /// Renders the chart as an SVG document; `name` only labels errors.
    pub fn to_svg(&self, name: &str) -> Result<String, ReportError> {
        let invalid = |reason: &str| ReportError::InvalidChart { name: name.to_owned(), reason: reason.to_owned() };
        if let Some(series) = self.series.iter().find(|s| !s.ranges.is_empty() && s.ranges.len() != s.points.len()) {
            return Err(invalid(&format!(
                "series {:?} has {} ranges for {} points",
                series.name,
                series.ranges.len(),
                series.points.len()
            )));
        }
        let drawn: Vec<Vec<(f64, f64)>> = self
            .series
            .iter()
            .map(|series| {
                series.drawn_points().into_iter().filter(|(x, y)| self.x.accepts(*x) && self.y.accepts(*y)).collect()
            })
            .collect();
        let all = || drawn.iter().flatten();
        let range_ends = self.series.iter().flat_map(|s| s.ranges.iter().flat_map(|&(low, high)| [low, high]));
        let x_values = all().map(|point| point.0).chain(self.references.iter().flat_map(Reference::xs));
        let y_values =
            all().map(|point| point.1).chain(range_ends).chain(self.references.iter().flat_map(Reference::ys));
        let x_range = self.x.resolve(x_values).ok_or_else(|| invalid("no drawable x values"))?;
        let y_range = self.y.resolve(y_values).ok_or_else(|| invalid("no drawable y values"))?;
        for (axis, (low, high)) in [(&self.x, x_range), (&self.y, y_range)] {
            #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN bounds must fail too
            if !(low < high) || (axis.scale == Scale::Log && low <= 0.0) {
                return Err(invalid(&format!("axis {:?} has an invalid range {low}..{high}", axis.label)));
            }
        }
        let (x_low, x_high) = x_range;
        let (y_low, y_high) = y_range;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            match (self.x.scale, self.y.scale) {
                (Scale::Linear, Scale::Linear) => self.draw(&root, x_low..x_high, y_low..y_high, &drawn),
                (Scale::Linear, Scale::Log) => self.draw(&root, x_low..x_high, (y_low..y_high).log_scale(), &drawn),
                (Scale::Log, Scale::Linear) => self.draw(&root, (x_low..x_high).log_scale(), y_low..y_high, &drawn),
                (Scale::Log, Scale::Log) => {
                    self.draw(&root, (x_low..x_high).log_scale(), (y_low..y_high).log_scale(), &drawn)
                }
            }
            .and_then(|()| root.present().map_err(draw_error))
            .map_err(|message| ReportError::Draw { name: name.to_owned(), message })?;
        }
        Ok(svg)
    }

    fn legend(&self) -> Legend {
        let series =
            self.series.iter().enumerate().map(|(index, series)| {
                (Swatch::Line(PALETTE[index % PALETTE.len()], series.mark), series.name.as_str())
            });
        let references = self.references.iter().map(|reference| {
            let swatch = match reference.shape {
                ReferenceShape::Points(_) => Swatch::ReferencePoints,
                _ => Swatch::ReferenceLine,
            };
            (swatch, reference.name.as_str())
        });
        Legend::new(series.chain(references).collect(), self.size.0)
    }

    fn draw<XR, YR>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, Shift>,
        x: XR,
        y: YR,
        drawn: &[Vec<(f64, f64)>],
    ) -> Result<(), String>
    where
        XR: AsRangedCoord<Value = f64>,
        YR: AsRangedCoord<Value = f64>,
        XR::CoordDescType: ValueFormatter<f64>,
        YR::CoordDescType: ValueFormatter<f64>,
    {
        root.fill(&WHITE).map_err(draw_error)?;
        let titled = root.titled(&self.title, ("sans-serif", 22)).map_err(draw_error)?;
        let plot = self.legend().place(&titled)?;
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x, y)
            .map_err(draw_error)?;
        let (x_range, y_range) = (chart.x_range(), chart.y_range());
        let x_label = |value: &f64| self.x.tick(&x_range, *value);
        let y_label = |value: &f64| self.y.tick(&y_range, *value);
        chart
            .configure_mesh()
            .x_desc(self.x.caption())
            .y_desc(self.y.caption())
            .axis_desc_style(("sans-serif", 17))
            .label_style(("sans-serif", 15))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(draw_error)?;
        for (index, (series, points)) in self.series.iter().zip(drawn).enumerate() {
            let color = PALETTE[index % PALETTE.len()];
            let style = color.stroke_width(2);
            let points = points.clone();
            match series.mark {
                Mark::Line | Mark::Step => chart.draw_series(LineSeries::new(points, style)),
                Mark::LinePoints => chart.draw_series(LineSeries::new(points, style).point_size(3)),
                Mark::DashedLine => chart.draw_series(DashedLineSeries::new(points, 8, 5, style)),
                Mark::Points => {
                    chart.draw_series(points.into_iter().map(|point| Circle::new(point, 3, color.filled())))
                }
            }
            .map_err(draw_error)?;
            let shown = || {
                series
                    .error_bars()
                    .filter(|&(x, low, high)| self.x.accepts(x) && self.y.accepts(low) && self.y.accepts(high))
            };
            let thin = color.stroke_width(1);
            chart
                .draw_series(shown().map(|(x, low, high)| PathElement::new(vec![(x, low), (x, high)], thin)))
                .map_err(draw_error)?;
            let caps = shown().flat_map(|(x, low, high)| [(x, low), (x, high)]);
            chart
                .draw_series(caps.map(|end| EmptyElement::at(end) + PathElement::new(vec![(-4, 0), (4, 0)], thin)))
                .map_err(draw_error)?;
        }
        self.draw_references(&mut chart)
    }

    fn draw_references<XR, YR>(
        &self,
        chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<XR, YR>>,
    ) -> Result<(), String>
    where
        XR: Ranged<ValueType = f64>,
        YR: Ranged<ValueType = f64>,
    {
        let (x_range, y_range) = (chart.x_range(), chart.y_range());
        let dotted =
            |from: (f64, f64), to: (f64, f64)| DashedLineSeries::new([from, to], 3, 4, REFERENCE_COLOR.stroke_width(2));
        for reference in &self.references {
            match &reference.shape {
                ReferenceShape::Points(points) => {
                    let shown: Vec<(f64, f64)> =
                        points.iter().copied().filter(|(x, y)| self.x.accepts(*x) && self.y.accepts(*y)).collect();
                    if shown.len() > 1 {
                        chart
                            .draw_series(DashedLineSeries::new(shown.clone(), 3, 4, REFERENCE_COLOR.stroke_width(1)))
                            .map_err(draw_error)?;
                    }
                    chart
                        .draw_series(shown.into_iter().map(|point| EmptyElement::at(point) + diamond((0, 0))))
                        .map_err(draw_error)?;
                }
                ReferenceShape::Horizontal(y) => {
                    chart.draw_series(dotted((x_range.start, *y), (x_range.end, *y))).map_err(draw_error)?;
                }
                ReferenceShape::Vertical(x) => {
                    chart.draw_series(dotted((*x, y_range.start), (*x, y_range.end))).map_err(draw_error)?;
                }
            }
        }
        Ok(())
    }
}

/// One series of a [`BarChart`]: one value per group, optionally with a
/// `(low, high)` range per group drawn as an error bar.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<f64>,
    /// One `(low, high)` per group, or empty for none.
    pub ranges: Vec<(f64, f64)>,
}

impl BarSeries {
    #[must_use]
    pub fn new(name: &str, values: Vec<f64>) -> Self {
        Self { name: name.to_owned(), values, ranges: Vec::new() }
    }

    /// Error bars, e.g. the minimum and maximum over repeats; one per group.
    #[must_use]
    pub fn ranges(mut self, ranges: Vec<(f64, f64)>) -> Self {
        self.ranges = ranges;
        self
    }
}

/// What a paper reports for the bars of a [`BarChart`]: one value per group
/// (NaN where the paper gives none), drawn as a black diamond on a dotted
/// line across the bar of series `on` (or across the whole group).
#[derive(Debug, Clone, PartialEq)]
pub struct BarReference {
    pub name: String,
    pub values: Vec<f64>,
    /// The name of the [`BarSeries`] the values belong to; `None`: the group as a whole.
    pub on: Option<String>,
}

impl BarReference {
    #[must_use]
    pub fn new(name: &str, values: Vec<f64>) -> Self {
        Self { name: name.to_owned(), values, on: None }
    }

    #[must_use]
    pub fn on(mut self, series: &str) -> Self {
        self.on = Some(series.to_owned());
        self
    }
}

/// Grouped bars: one group per category on the x axis, one bar per series in
/// each group. The y axis is linear and includes 0, or logarithmic
/// (`Axis::log`, for ratios that span decades): bars then grow from 1, so a
/// ratio above 1 rises and one below 1 falls, and non-positive values are
/// not drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub groups: Vec<String>,
    pub y: Axis,
    pub series: Vec<BarSeries>,
    pub references: Vec<BarReference>,
    pub size: (u32, u32),
}

impl BarChart {
    #[must_use]
    pub fn new(title: &str, groups: Vec<String>, y: Axis) -> Self {
        Self { title: title.to_owned(), groups, y, series: Vec::new(), references: Vec::new(), size: SIZE_DEFAULT }
    }

    #[must_use]
    pub fn with(mut self, series: BarSeries) -> Self {
        self.series.push(series);
        self
    }

    /// Adds what the paper reports, drawn in black with a legend entry.
    #[must_use]
    pub fn reference(mut self, reference: BarReference) -> Self {
        self.references.push(reference);
        self
    }

    /// A reference at the same `value` in every group (a claim stated as one
    /// ratio, or "no change" at 1.0).
    #[must_use]
    pub fn level(self, name: &str, value: f64) -> Self {
        let values = vec![value; self.groups.len()];
        self.reference(BarReference::new(name, values))
    }

    /// Renders the chart as an SVG document; `name` only labels errors.
    pub fn to_svg(&self, name: &str) -> Result<String, ReportError> {
        let invalid = |reason: String| ReportError::InvalidChart { name: name.to_owned(), reason };
        if self.groups.is_empty() || self.series.is_empty() {
            return Err(invalid("a bar chart needs at least one group and one series".to_owned()));
        }
        let groups = self.groups.len();
        let lengths =
            self.series.iter().map(|s| (&s.name, "values", s.values.len())).chain(
                self.series.iter().filter(|s| !s.ranges.is_empty()).map(|s| (&s.name, "ranges", s.ranges.len())),
            );
        let lengths = lengths.chain(self.references.iter().map(|r| (&r.name, "reference values", r.values.len())));
        if let Some((series, what, count)) = lengths.into_iter().find(|(_, _, count)| *count != groups) {
            return Err(invalid(format!("{series:?} has {count} {what} for {groups} groups")));
        }
        if let Some(reference) =
            self.references.iter().find(|r| r.on.as_ref().is_some_and(|on| self.series_index(on).is_none()))
        {
            return Err(invalid(format!("reference {:?} is on a series the chart does not have", reference.name)));
        }
        let values = self.series.iter().flat_map(|series| {
            series.values.iter().copied().chain(series.ranges.iter().flat_map(|&(low, high)| [low, high]))
        });
        let base = if self.y.scale == Scale::Log { 1.0 } else { 0.0 };
        let values = values.chain(self.references.iter().flat_map(|r| r.values.iter().copied())).chain([base]);
        let (y_low, y_high) = self.y.resolve(values).ok_or_else(|| invalid("no finite values".to_owned()))?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            self.draw(&root, self.drawn(y_low.min(base)), self.drawn(y_high))
                .and_then(|()| root.present().map_err(draw_error))
                .map_err(|message| ReportError::Draw { name: name.to_owned(), message })?;
        }
        Ok(svg)
    }

    fn series_index(&self, name: &str) -> Option<usize> {
        self.series.iter().position(|series| series.name == name)
    }

    /// Where a value is drawn on the y axis: itself, or its log10 on a log
    /// axis (bars are drawn in log units from 0, i.e. from 1; a non-positive
    /// value gives a non-finite position and is skipped like a NaN).
    fn drawn(&self, value: f64) -> f64 {
        if self.y.scale == Scale::Log {
            value.log10()
        } else {
            value
        }
    }

    /// The tick label of a drawn position (on a log axis the value it stands
    /// for, to two significant digits: 1, 3.2, 10, 32, …).
    fn tick(&self, drawn: f64) -> String {
        if self.y.scale == Scale::Log {
            let value = 10f64.powf(drawn);
            let digits = 10f64.powf(value.log10().floor() - 1.0);
            tick_label((value / digits).round() * digits)
        } else {
            tick_label(drawn)
        }
    }

    /// On a log axis each bar carries its value above the line at 1 (or its
    /// top): a ratio of 1 is a bar of no height, and a 0 or a missing ratio
    /// cannot be drawn at all, so without the label a reader sees nothing
    /// where the data says "equal", "none" or "no ratio".
    fn label_values<DB: DrawingBackend>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        series: &BarSeries,
        middle_of: impl Fn(usize) -> f64,
    ) -> Result<(), String> {
        let style = ("sans-serif", LABEL_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom));
        let labels = series.values.iter().enumerate().map(|(group, &value)| {
            let text = match value {
                value if value.is_nan() => "n/a".to_owned(),
                value if value <= 0.0 => "0".to_owned(),
                value => tick_label(value),
            };
            let top = self.drawn(value).max(0.0);
            // Lifted clear of a paper marker drawn on the same level.
            EmptyElement::at((middle_of(group), if top.is_finite() { top } else { 0.0 }))
                + Text::new(text, (0, -10), style.clone())
        });
        chart.draw_series(labels).map(|_| ()).map_err(draw_error)
    }

    fn legend(&self) -> Legend {
        let bars = self
            .series
            .iter()
            .enumerate()
            .map(|(index, s)| (Swatch::Bar(PALETTE[index % PALETTE.len()]), s.name.as_str()));
        let references = self.references.iter().map(|reference| (Swatch::ReferencePoints, reference.name.as_str()));
        Legend::new(bars.chain(references).collect(), self.size.0)
    }

    fn draw(&self, root: &DrawingArea<SVGBackend<'_>, Shift>, y_low: f64, y_high: f64) -> Result<(), String> {
        root.fill(&WHITE).map_err(draw_error)?;
        let titled = root.titled(&self.title, ("sans-serif", 22)).map_err(draw_error)?;
        let plot = self.legend().place(&titled)?;
        let group_count = f64_of(self.groups.len());
        let (plot_width, _) = plot.dim_in_pixel();
        let group_pixels = (f64::from(plot_width) - 90.0) / group_count;
        let columns = saturating((group_pixels / CHAR_WIDTH).max(4.0));
        let labels: Vec<Vec<String>> = self.groups.iter().map(|group| wrap(group, columns)).collect();
        let label_lines = labels.iter().map(Vec::len).max().unwrap_or(1);
        let label_area = 16 + LINE_HEIGHT * i32::try_from(label_lines).unwrap_or(4);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(label_area)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..group_count, y_low..y_high)
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y.caption())
            .axis_desc_style(("sans-serif", 17))
            .label_style(("sans-serif", 15))
            .y_label_formatter(&|value| self.tick(*value))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(draw_error)?;
        let bar_width = 0.8 / f64_of(self.series.len());
        let left_of = |group: usize, series: usize| f64_of(group) + 0.1 + f64_of(series) * bar_width;
        for (index, series) in self.series.iter().enumerate() {
            let color = PALETTE[index % PALETTE.len()];
            let bars = series.values.iter().map(|&value| self.drawn(value)).enumerate();
            let bars = bars.filter(|(_, value)| value.is_finite()).map(|(group, value)| {
                let left = left_of(group, index);
                Rectangle::new([(left, 0.0), (left + bar_width, value)], color.filled())
            });
            chart.draw_series(bars).map_err(draw_error)?;
            if self.y.scale == Scale::Log {
                self.label_values(&mut chart, series, |group| left_of(group, index) + bar_width / 2.0)?;
            }
            let whiskers = series.ranges.iter().map(|&(low, high)| (self.drawn(low), self.drawn(high))).enumerate();
            let whiskers = whiskers.filter(|(_, (low, high))| low.is_finite() && high.is_finite());
            let darker = RGBColor(color.0 / 2, color.1 / 2, color.2 / 2).stroke_width(1);
            chart
                .draw_series(whiskers.flat_map(|(group, (low, high))| {
                    let middle = left_of(group, index) + bar_width / 2.0;
                    let cap = bar_width / 4.0;
                    [
                        PathElement::new(vec![(middle, low), (middle, high)], darker),
                        PathElement::new(vec![(middle - cap, low), (middle + cap, low)], darker),
                        PathElement::new(vec![(middle - cap, high), (middle + cap, high)], darker),
                    ]
                }))
                .map_err(draw_error)?;
        }
        for reference in &self.references {
            let (first, last) = reference
                .on
                .as_deref()
                .and_then(|on| self.series_index(on))
                .map_or((0, self.series.len() - 1), |index| (index, index));
            let values = reference.values.iter().map(|&value| self.drawn(value)).enumerate();
            for (group, value) in values.filter(|(_, value)| value.is_finite()) {
                let (left, right) = (left_of(group, first), left_of(group, last) + bar_width);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(left, value), (right, value)],
                        3,
                        3,
                        REFERENCE_COLOR.stroke_width(2),
                    ))
                    .map_err(draw_error)?;
                chart
                    .draw_series([EmptyElement::at(((left + right) / 2.0, value)) + diamond((0, 0))])
                    .map_err(draw_error)?;
            }
        }
        let label_style = ("sans-serif", LABEL_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
        for (group, lines) in labels.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(f64_of(group) + 0.5, y_low));
            for (line_index, line) in lines.iter().enumerate() {
                let line_y = y + 8 + LINE_HEIGHT * i32::try_from(line_index).unwrap_or(0);
                root.draw(&Text::new(line.as_str(), (x, line_y), label_style.clone())).map_err(draw_error)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(0.009_000_000_000_000_001), "0.009");
        assert_eq!(tick_label(1500.0), "1500");
        assert_eq!(tick_label(12.5), "12.5");
        assert_eq!(tick_label(0.0015), "0.0015");
        assert_eq!(tick_label(-0.000_000_1), "-1e-7");
        assert_eq!(tick_label(25_000_000.0), "2.5e7");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(0.1 + 0.2), "0.3");
    }

    #[test]
    fn flat_data_get_their_own_range_and_empty_units_print_nothing() {
        assert_eq!(Axis::new("copies").resolve([0.0, 0.0].into_iter()), Some((0.0, 1.0)));
        assert_eq!(Axis::new("copies").resolve([5.0, 5.0].into_iter()), Some((4.5, 5.5)));
        assert_eq!(Axis::new("waf").resolve([1.0, 3.0].into_iter()), Some((0.9, 3.1)));
        assert_eq!(Axis::new("MB/s").resolve([0.0, 10.0].into_iter()).map(|range| range.0), Some(0.0));
        assert_eq!(Axis::new("WAF").unit("").caption(), "WAF");
    }

    #[test]
    fn legends_wrap_and_sit_right_of_the_plot() {
        assert_eq!(wrap("a long legend entry", 8), vec!["a long", "legend", "entry"]);
        let legend = Legend::new(vec![(Swatch::ReferencePoints, "paper"), (Swatch::ReferenceLine, "")], 900);
        assert_eq!(legend.entries.len(), 1, "unnamed entries have no legend line");
        assert!(legend.width > 0 && f64::from(legend.width) <= 900.0 * LEGEND_MAX_SHARE);
    }

    #[test]
    fn references_are_drawn_with_a_legend_entry_and_extend_the_range() {
        let chart = Chart::new("t", Axis::new("x"), Axis::new("y"))
            .with(Series::line("nandlab", vec![(0.0, 1.0), (1.0, 2.0)]).ranges(vec![(0.5, 1.5), (1.5, 2.5)]))
            .reference(Reference::points("paper, Fig. 1", vec![(0.5, 40.0)]))
            .reference(Reference::horizontal("paper bound", 3.0));
        let svg = chart.to_svg("t.svg").expect("renders");
        assert!(svg.contains("paper, Fig. 1") && svg.contains("paper bound"), "legend names the references");
        assert!(svg.contains("\n40\n</text>"), "the y axis reaches the paper's value 40: {svg}");
        let bad = Chart::new("t", Axis::new("x"), Axis::new("y"))
            .with(Series::line("s", vec![(0.0, 1.0)]).ranges(vec![(0.0, 1.0), (1.0, 2.0)]));
        assert!(matches!(bad.to_svg("bad.svg"), Err(ReportError::InvalidChart { .. })));
    }

    #[test]
    fn bar_references_name_an_existing_series() {
        let groups = vec!["a".to_owned(), "b".to_owned()];
        let chart = BarChart::new("Bars", groups, Axis::new("v"))
            .with(BarSeries::new("s", vec![1.0, 2.0]).ranges(vec![(0.5, 1.5), (1.0, 3.0)]))
            .reference(BarReference::new("paper, Table 2", vec![f64::NAN, 2.5]).on("s"));
        assert!(chart.to_svg("b.svg").expect("renders").contains("paper, Table 2"));
        let wrong = chart.clone().reference(BarReference::new("p", vec![1.0, 1.0]).on("missing"));
        assert!(matches!(wrong.to_svg("b.svg"), Err(ReportError::InvalidChart { .. })));
    }

    #[test]
    fn line_chart_svg_names_series_and_axes() {
        let chart = Chart::new("Throughput", Axis::new("time").unit("s"), Axis::new("rate").unit("pages/s").log())
            .with(Series::line("alpha", vec![(0.0, 1.0), (1.0, 10.0), (2.0, 100.0)]))
            .with(Series::scatter("beta", vec![(0.5, 5.0)]));
        let svg = chart.to_svg("t.svg").expect("chart renders");
        for needle in ["<svg", "Throughput", "time [s]", "rate [pages/s]", "alpha", "beta"] {
            assert!(svg.contains(needle), "missing {needle}");
        }
    }

    #[test]
    fn cdf_is_a_staircase_ending_at_one() {
        let series = Series::cdf("c", &[3.0, 1.0, 2.0, f64::NAN]);
        assert_eq!(series.points, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
        assert_eq!(
            series.drawn_points(),
            vec![(1.0, 1.0 / 3.0), (2.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 2.0 / 3.0), (3.0, 1.0)]
        );
    }

    #[test]
    fn a_log_axis_over_decades_labels_one_two_and_five_only() {
        // Telomere Fig. 10's RBER axis: 0.001 to 0.02 put nine labels in the
        // last decade, overlapping; now 0.005 and 0.01 are labelled, 0.006 not.
        let chart = Chart::new("CDF", Axis::new("RBER").log(), Axis::new("fraction"))
            .with(Series::cdf("blocks", &[0.001, 0.004, 0.0063, 0.0071, 0.0089, 0.0095, 0.02]));
        let svg = chart.to_svg("cdf.svg").expect("renders");
        let labels: Vec<&str> = svg.lines().map(str::trim).collect();
        for shown in ["0.001", "0.002", "0.005", "0.01", "0.02"] {
            assert!(labels.contains(&shown), "{shown} is labelled");
        }
        for hidden in ["0.003", "0.006", "0.007", "0.009"] {
            assert!(!labels.contains(&hidden), "{hidden} is not labelled");
        }
        let log = Axis::new("x").log();
        assert_eq!(log.tick(&(2.0..9.0), 4.0), "4", "under a decade every tick is labelled");
        assert_eq!(log.tick(&(0.001..0.02), 0.006), "");
        assert_eq!(Axis::new("x").tick(&(0.001..0.02), 0.006), "0.006", "a linear axis labels every tick");
    }

    #[test]
    fn log_axis_without_positive_values_is_an_error() {
        let chart = Chart::new("t", Axis::new("x").log(), Axis::new("y"))
            .with(Series::line("s", vec![(0.0, 1.0), (-1.0, 2.0)]));
        assert!(matches!(chart.to_svg("bad.svg"), Err(ReportError::InvalidChart { .. })));
    }

    #[test]
    fn bar_chart_checks_series_lengths_and_draws_group_labels() {
        let groups = vec!["g1".to_owned(), "g2".to_owned()];
        let good = BarChart::new("Bars", groups.clone(), Axis::new("value").unit("%"))
            .with(BarSeries::new("s", vec![1.0, 2.0]));
        let svg = good.to_svg("bars.svg").expect("bars render");
        assert!(svg.contains("g1") && svg.contains("g2") && svg.contains("value [%]"));
        let bad = BarChart::new("Bars", groups, Axis::new("value")).with(BarSeries::new("s", vec![1.0]));
        assert!(matches!(bad.to_svg("bars.svg"), Err(ReportError::InvalidChart { .. })));
    }

    #[test]
    fn log_bar_charts_span_decades_from_one_and_label_ticks_by_value() {
        // A ratio of 1.06 next to a paper's 1322: on a log axis both are
        // visible, the ticks print values (10, 100, 1000), not their logs.
        let chart = BarChart::new("Ratios", vec!["single".to_owned()], Axis::new("ratio").log())
            .with(BarSeries::new("measured", vec![1.06]).ranges(vec![(1.02, 1.1)]))
            .with(BarSeries::new("below one", vec![0.5]))
            .reference(BarReference::new("paper", vec![1322.0]).on("measured"));
        assert_eq!(chart.drawn(1000.0), 3.0);
        assert!(chart.drawn(0.0).is_infinite() && chart.drawn(-1.0).is_nan(), "non-positive values are not drawn");
        assert_eq!(chart.tick(2.0), "100");
        assert_eq!(chart.tick(0.5), "3.2");
        let svg = chart.to_svg("ratios.svg").expect("log bars render");
        let labels: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(labels.contains(&"1000") && labels.contains(&"10"), "ticks label values");
        assert!(svg.contains("paper") && svg.contains("below one"));
    }

    #[test]
    fn log_bars_that_cannot_be_seen_say_their_value() {
        // Equal (a bar of no height), none (0: not drawable) and no ratio at all.
        let groups = vec!["equal".to_owned(), "none".to_owned(), "no ratio".to_owned()];
        let chart = BarChart::new("Ratios", groups, Axis::new("ratio").log())
            .with(BarSeries::new("measured", vec![1.0, 0.0, f64::NAN]))
            .reference(BarReference::new("paper", vec![709.0, 1322.0, 1.0]));
        let svg = chart.to_svg("ratios.svg").expect("log bars render");
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in ["1", "0", "n/a"] {
            assert!(texts.contains(&label), "a bar labelled {label:?}");
        }
    }
}
