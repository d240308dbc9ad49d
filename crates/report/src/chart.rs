//! SVG charts drawn with `plotters` (SVG backend, no system fonts): [`Chart`]
//! for x/y plots (lines, dashed lines, scatter, steps, CDFs; linear or log
//! axes) and [`BarChart`] for grouped bars. Both render to an SVG string; the
//! [`crate::OutputDir`] writes it.

use crate::ReportError;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
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
    /// Printed in brackets after the label, e.g. "utilization [%]".
    pub unit: Option<String>,
    pub scale: Scale,
    /// Fixed `(low, high)`; when `None` the range is fitted to the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
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
            Some(unit) => format!("{} [{unit}]", self.label),
            None => self.label.clone(),
        }
    }

    /// The drawn range: the fixed one, or the data's extent with a margin.
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
            Scale::Log => (low / 1.5, high * 1.5),
            Scale::Linear if low == high => (low - 1.0, high + 1.0),
            Scale::Linear => {
                let margin = (high - low) * 0.05;
                (low - margin, high + margin)
            }
        })
    }

    fn accepts(&self, value: f64) -> bool {
        value.is_finite() && (self.scale == Scale::Linear || value > 0.0)
    }
}

/// Where the legend box sits inside the plotting area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Legend {
    /// The corner that hides the least of the data (see [`Legend::resolve`]).
    #[default]
    Auto,
    UpperRight,
    UpperLeft,
    MiddleLeft,
    MiddleRight,
    LowerLeft,
    LowerRight,
}

/// Share of the plot's width and height a legend box is taken to cover in its corner.
const LEGEND_BOX: (f64, f64) = (0.35, 0.3);
/// Points sampled along each segment of a line when counting what a legend would hide.
const SEGMENT_SAMPLES: u32 = 8;

impl Legend {
    /// `Auto` becomes the corner (upper right, upper left, lower right, lower
    /// left, first wins a tie) whose legend-sized box covers the fewest drawn
    /// points and line samples; the other choices stay as they are.
    fn resolve(self, drawn: &[(&[(f64, f64)], bool)], x: (Scale, f64, f64), y: (Scale, f64, f64)) -> Self {
        if self != Self::Auto {
            return self;
        }
        let unit = |(scale, low, high): (Scale, f64, f64), value: f64| match scale {
            Scale::Linear => (value - low) / (high - low),
            Scale::Log => (value.ln() - low.ln()) / (high.ln() - low.ln()),
        };
        let mut samples = Vec::new();
        for &(points, joined) in drawn {
            let normalized: Vec<(f64, f64)> = points.iter().map(|&(px, py)| (unit(x, px), unit(y, py))).collect();
            samples.extend_from_slice(&normalized);
            if joined {
                for pair in normalized.windows(2) {
                    let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
                    for step in 1..SEGMENT_SAMPLES {
                        let t = f64::from(step) / f64::from(SEGMENT_SAMPLES);
                        samples.push((x0 + t * (x1 - x0), y0 + t * (y1 - y0)));
                    }
                }
            }
        }
        let (width, height) = LEGEND_BOX;
        let covered = |right: bool, upper: bool| {
            samples
                .iter()
                .filter(|&&(px, py)| {
                    let in_x = if right { px >= 1.0 - width } else { px <= width };
                    let in_y = if upper { py >= 1.0 - height } else { py <= height };
                    in_x && in_y
                })
                .count()
        };
        let corners = [
            (Self::UpperRight, covered(true, true)),
            (Self::UpperLeft, covered(false, true)),
            (Self::LowerRight, covered(true, false)),
            (Self::LowerLeft, covered(false, false)),
        ];
        corners.iter().min_by_key(|(_, count)| *count).map_or(Self::UpperRight, |(corner, _)| *corner)
    }

    fn position(self) -> SeriesLabelPosition {
        match self {
            Self::Auto | Self::UpperRight => SeriesLabelPosition::UpperRight,
            Self::UpperLeft => SeriesLabelPosition::UpperLeft,
            Self::MiddleLeft => SeriesLabelPosition::MiddleLeft,
            Self::MiddleRight => SeriesLabelPosition::MiddleRight,
            Self::LowerLeft => SeriesLabelPosition::LowerLeft,
            Self::LowerRight => SeriesLabelPosition::LowerRight,
        }
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

/// A named series of `(x, y)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub mark: Mark,
}

impl Series {
    #[must_use]
    pub fn new(name: &str, mark: Mark, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.to_owned(), points, mark }
    }

    #[must_use]
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, Mark::Line, points)
    }

    #[must_use]
    pub fn scatter(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, Mark::Points, points)
    }

    /// The empirical CDF of `samples` (non-finite samples are dropped) as a
    /// step series: y is the fraction of samples ≤ x, from 0 to 1.
    #[must_use]
    pub fn cdf(name: &str, samples: &[f64]) -> Self {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|sample| sample.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let count = sorted.len() as f64;
        #[allow(clippy::cast_precision_loss)]
        let points = sorted.iter().enumerate().map(|(index, value)| (*value, (index + 1) as f64 / count)).collect();
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
}

/// An x/y chart with any number of named series.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub legend: Legend,
    pub size: (u32, u32),
}

impl Chart {
    #[must_use]
    pub fn new(title: &str, x: Axis, y: Axis) -> Self {
        Self { title: title.to_owned(), x, y, series: Vec::new(), legend: Legend::default(), size: SIZE_DEFAULT }
    }

    #[must_use]
    pub fn with(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    #[must_use]
    pub fn legend(mut self, legend: Legend) -> Self {
        self.legend = legend;
        self
    }

    pub fn push(&mut self, series: Series) -> &mut Self {
        self.series.push(series);
        self
    }

    /// Renders the chart as an SVG document; `name` only labels errors.
    pub fn to_svg(&self, name: &str) -> Result<String, ReportError> {
        let invalid = |reason: &str| ReportError::InvalidChart { name: name.to_owned(), reason: reason.to_owned() };
        let drawn: Vec<Vec<(f64, f64)>> = self
            .series
            .iter()
            .map(|series| {
                series.drawn_points().into_iter().filter(|(x, y)| self.x.accepts(*x) && self.y.accepts(*y)).collect()
            })
            .collect();
        let all = || drawn.iter().flatten();
        let x_range = self.x.resolve(all().map(|point| point.0)).ok_or_else(|| invalid("no drawable x values"))?;
        let y_range = self.y.resolve(all().map(|point| point.1)).ok_or_else(|| invalid("no drawable y values"))?;
        for (axis, (low, high)) in [(&self.x, x_range), (&self.y, y_range)] {
            #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN bounds must fail too
            if !(low < high) || (axis.scale == Scale::Log && low <= 0.0) {
                return Err(invalid(&format!("axis {:?} has an invalid range {low}..{high}", axis.label)));
            }
        }
        let (x_low, x_high) = x_range;
        let (y_low, y_high) = y_range;
        let joined: Vec<(&[(f64, f64)], bool)> = self
            .series
            .iter()
            .zip(&drawn)
            .map(|(series, points)| (points.as_slice(), series.mark != Mark::Points))
            .collect();
        let legend = self.legend.resolve(&joined, (self.x.scale, x_low, x_high), (self.y.scale, y_low, y_high));
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            let result = match (self.x.scale, self.y.scale) {
                (Scale::Linear, Scale::Linear) => self.draw(&root, x_low..x_high, y_low..y_high, &drawn, legend),
                (Scale::Linear, Scale::Log) => {
                    self.draw(&root, x_low..x_high, (y_low..y_high).log_scale(), &drawn, legend)
                }
                (Scale::Log, Scale::Linear) => {
                    self.draw(&root, (x_low..x_high).log_scale(), y_low..y_high, &drawn, legend)
                }
                (Scale::Log, Scale::Log) => {
                    self.draw(&root, (x_low..x_high).log_scale(), (y_low..y_high).log_scale(), &drawn, legend)
                }
            };
            result
                .and_then(|()| root.present().map_err(|error| error.to_string()))
                .map_err(|message| ReportError::Draw { name: name.to_owned(), message })?;
        }
        Ok(svg)
    }

    fn draw<XR, YR>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, Shift>,
        x: XR,
        y: YR,
        drawn: &[Vec<(f64, f64)>],
        legend: Legend,
    ) -> Result<(), String>
    where
        XR: AsRangedCoord<Value = f64>,
        YR: AsRangedCoord<Value = f64>,
        XR::CoordDescType: ValueFormatter<f64>,
        YR::CoordDescType: ValueFormatter<f64>,
    {
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(x, y)
            .map_err(|error| error.to_string())?;
        chart
            .configure_mesh()
            .x_desc(self.x.caption())
            .y_desc(self.y.caption())
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|error| error.to_string())?;
        for (index, (series, points)) in self.series.iter().zip(drawn).enumerate() {
            let color = PALETTE[index % PALETTE.len()];
            let style = color.stroke_width(2);
            let points = points.clone();
            let annotation = match series.mark {
                Mark::Line | Mark::Step => chart.draw_series(LineSeries::new(points, style)),
                Mark::LinePoints => chart.draw_series(LineSeries::new(points, style).point_size(3)),
                Mark::DashedLine => chart.draw_series(DashedLineSeries::new(points, 8, 5, style)),
                Mark::Points => {
                    chart.draw_series(points.into_iter().map(|point| Circle::new(point, 3, color.filled())))
                }
            }
            .map_err(|error| error.to_string())?;
            annotation
                .label(series.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        if self.series.iter().any(|series| !series.name.is_empty()) {
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .position(legend.position())
                .draw()
                .map_err(|error| error.to_string())?;
        }
        Ok(())
    }
}

/// One series of a [`BarChart`]: one value per group, and optionally the
/// range each value comes from (repeated runs: median bar, min-max whisker).
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<f64>,
    pub ranges: Option<Vec<(f64, f64)>>,
}

impl BarSeries {
    #[must_use]
    pub fn new(name: &str, values: Vec<f64>) -> Self {
        Self { name: name.to_owned(), values, ranges: None }
    }

    /// Error bars: one (low, high) per group (e.g. the range over repeated runs).
    #[must_use]
    pub fn ranges(mut self, ranges: Vec<(f64, f64)>) -> Self {
        self.ranges = Some(ranges);
        self
    }
}

/// A horizontal reference line across a [`BarChart`] (e.g. a paper's number).
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub name: String,
    pub value: f64,
}

/// Grouped bars: one group per category on the x axis, one bar per series in
/// each group. The y axis is linear and includes 0.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub groups: Vec<String>,
    pub y: Axis,
    pub series: Vec<BarSeries>,
    pub references: Vec<Reference>,
    pub legend: Legend,
    pub size: (u32, u32),
}

/// Width each group of bars gets at least, so group labels do not overlap.
const GROUP_WIDTH_MIN: u32 = 130;

/// Colours of reference lines (apart from the bars' palette).
const REFERENCE_COLORS: [RGBColor; 3] = [RGBColor(200, 0, 0), RGBColor(0, 120, 0), RGBColor(90, 90, 90)];

impl BarChart {
    /// Group labels wrap at spaces, one word per line; the chart widens
    /// with the number of groups so labels never overlap.
    #[must_use]
    pub fn new(title: &str, groups: Vec<String>, y: Axis) -> Self {
        let width = u32::try_from(groups.len()).unwrap_or(u32::MAX).saturating_mul(GROUP_WIDTH_MIN).saturating_add(100);
        let size = (SIZE_DEFAULT.0.max(width), SIZE_DEFAULT.1);
        Self {
            title: title.to_owned(),
            groups,
            y,
            series: Vec::new(),
            references: Vec::new(),
            legend: Legend::default(),
            size,
        }
    }

    /// A dashed horizontal line at `value`, named in the legend.
    #[must_use]
    pub fn reference(mut self, name: &str, value: f64) -> Self {
        self.references.push(Reference { name: name.to_owned(), value });
        self
    }

    #[must_use]
    pub fn with(mut self, series: BarSeries) -> Self {
        self.series.push(series);
        self
    }

    #[must_use]
    pub fn legend(mut self, legend: Legend) -> Self {
        self.legend = legend;
        self
    }

    /// Renders the chart as an SVG document; `name` only labels errors.
    pub fn to_svg(&self, name: &str) -> Result<String, ReportError> {
        let invalid = |reason: String| ReportError::InvalidChart { name: name.to_owned(), reason };
        if self.y.scale == Scale::Log {
            return Err(invalid("bar charts need a linear y axis".to_owned()));
        }
        if self.groups.is_empty() || self.series.is_empty() {
            return Err(invalid("a bar chart needs at least one group and one series".to_owned()));
        }
        if let Some(series) = self.series.iter().find(|series| {
            series.values.len() != self.groups.len()
                || series.ranges.as_ref().is_some_and(|ranges| ranges.len() != self.groups.len())
        }) {
            return Err(invalid(format!(
                "series {:?} has {} values (and ranges) for {} groups",
                series.name,
                series.values.len(),
                self.groups.len()
            )));
        }
        let ranges =
            self.series.iter().flat_map(|series| series.ranges.iter().flatten().flat_map(|(low, high)| [*low, *high]));
        let references = self.references.iter().map(|reference| reference.value);
        let values = self
            .series
            .iter()
            .flat_map(|series| series.values.iter().copied())
            .chain(ranges)
            .chain(references)
            .chain([0.0]);
        let (y_low, y_high) = self.y.resolve(values).ok_or_else(|| invalid("no finite values".to_owned()))?;
        // Bars grow from 0: no margin below a non-negative axis.
        let y_low = if self.y.range.is_none()
            && y_low < 0.0
            && self.series.iter().flat_map(|series| &series.values).all(|value| value.is_nan() || *value >= 0.0)
        {
            0.0
        } else {
            y_low
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            self.draw(&root, y_low.min(0.0), y_high)
                .and_then(|()| root.present().map_err(|error| error.to_string()))
                .map_err(|message| ReportError::Draw { name: name.to_owned(), message })?;
        }
        Ok(svg)
    }

    fn draw(&self, root: &DrawingArea<SVGBackend<'_>, Shift>, y_low: f64, y_high: f64) -> Result<(), String> {
        root.fill(&WHITE).map_err(|error| error.to_string())?;
        #[allow(clippy::cast_precision_loss)]
        let group_count = self.groups.len() as f64;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(24 + 18 * self.label_lines())
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..group_count, y_low..y_high)
            .map_err(|error| error.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y.caption())
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|error| error.to_string())?;
        #[allow(clippy::cast_precision_loss)]
        let bar_width = 0.8 / self.series.len() as f64;
        for (index, series) in self.series.iter().enumerate() {
            let color = PALETTE[index % PALETTE.len()];
            #[allow(clippy::cast_precision_loss)]
            let offset = 0.1 + index as f64 * bar_width;
            let bars = series.values.iter().enumerate().filter(|(_, value)| value.is_finite()).map(|(group, value)| {
                #[allow(clippy::cast_precision_loss)]
                let left = group as f64 + offset;
                Rectangle::new([(left, 0.0), (left + bar_width, *value)], color.filled())
            });
            chart
                .draw_series(bars)
                .map_err(|error| error.to_string())?
                .label(series.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
            if let Some(ranges) = &series.ranges {
                let cap = bar_width / 4.0;
                let whiskers = ranges
                    .iter()
                    .enumerate()
                    .filter(|(_, (low, high))| low.is_finite() && high.is_finite())
                    .flat_map(|(group, &(low, high))| {
                        #[allow(clippy::cast_precision_loss)]
                        let middle = group as f64 + offset + bar_width / 2.0;
                        [
                            vec![(middle, low), (middle, high)],
                            vec![(middle - cap, low), (middle + cap, low)],
                            vec![(middle - cap, high), (middle + cap, high)],
                        ]
                    })
                    .map(|points| PathElement::new(points, BLACK.stroke_width(1)));
                chart.draw_series(whiskers).map_err(|error| error.to_string())?;
            }
        }
        for (index, reference) in self.references.iter().enumerate() {
            let color = REFERENCE_COLORS[index % REFERENCE_COLORS.len()];
            let ends = [(0.0, reference.value), (group_count, reference.value)];
            chart
                .draw_series(DashedLineSeries::new(ends, 8, 5, color.stroke_width(2)))
                .map_err(|error| error.to_string())?
                .label(reference.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .position(self.legend.position())
            .draw()
            .map_err(|error| error.to_string())?;
        let label_style = ("sans-serif", 15).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
        for (group, label) in self.groups.iter().enumerate() {
            #[allow(clippy::cast_precision_loss)]
            let (x, y) = chart.backend_coord(&(group as f64 + 0.5, y_low));
            for (line, word) in (0i32..).zip(label.split(' ')) {
                root.draw(&Text::new(word, (x, y + 8 + 18 * line), label_style.clone()))
                    .map_err(|error| error.to_string())?;
            }
        }
        Ok(())
    }

    /// Lines of the tallest group label (one word per line).
    fn label_lines(&self) -> u32 {
        let most = self.groups.iter().map(|label| label.split(' ').count()).max().unwrap_or(1);
        u32::try_from(most).unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_automatic_legend_takes_the_emptiest_corner() {
        let linear = |low, high| (Scale::Linear, low, high);
        // A line rising to the upper right: the upper left is empty.
        let rising: [(&[(f64, f64)], bool); 1] = [(&[(0.0, 0.0), (5.0, 1.0), (10.0, 10.0)], true)];
        assert_eq!(Legend::Auto.resolve(&rising, linear(0.0, 10.0), linear(0.0, 10.0)), Legend::UpperLeft);
        // Falling from the upper left, then flat along the bottom: the upper right is empty.
        let falling: [(&[(f64, f64)], bool); 1] = [(&[(0.0, 10.0), (3.0, 0.0), (10.0, 0.0)], true)];
        assert_eq!(Legend::Auto.resolve(&falling, linear(0.0, 10.0), linear(0.0, 10.0)), Legend::UpperRight);
        // Samples along the segment count: a line through the upper right between two far points.
        let through: [(&[(f64, f64)], bool); 2] =
            [(&[(0.0, 6.0), (10.0, 10.0)], true), (&[(0.0, 0.0), (10.0, 0.0)], false)];
        assert_ne!(Legend::Auto.resolve(&through, linear(0.0, 10.0), linear(0.0, 10.0)), Legend::UpperRight);
        // Log axes are measured in decades; an explicit choice is kept.
        let log_points: [(&[(f64, f64)], bool); 1] = [(&[(1.0, 1.0), (1000.0, 1000.0)], false)];
        let log = |low, high| (Scale::Log, low, high);
        assert_eq!(Legend::Auto.resolve(&log_points, log(1.0, 1000.0), log(1.0, 1000.0)), Legend::UpperLeft);
        assert_eq!(Legend::LowerLeft.resolve(&rising, linear(0.0, 10.0), linear(0.0, 10.0)), Legend::LowerLeft);
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
        let ranged = BarChart::new("Bars", vec!["two words".to_owned(), "g2".to_owned()], Axis::new("value"))
            .with(BarSeries::new("s", vec![1.0, 2.0]).ranges(vec![(0.5, 1.5), (1.8, 2.4)]))
            .reference("paper", 3.0);
        let svg = ranged.to_svg("ranged.svg").expect("error bars and references render");
        assert!(svg.contains("paper"), "the reference is in the legend");
        assert!(svg.contains("two") && svg.contains("words") && !svg.contains("two words"), "labels wrap per word");
        let bad = BarChart::new("Bars", groups.clone(), Axis::new("value")).with(BarSeries::new("s", vec![1.0]));
        assert!(matches!(bad.to_svg("bars.svg"), Err(ReportError::InvalidChart { .. })));
        let whiskered = BarChart::new("Bars", groups.clone(), Axis::new("value"))
            .with(BarSeries::new("s", vec![1.0, 2.0]).ranges(vec![(0.5, 1.5), (1.0, 9.0)]));
        let svg = whiskered.to_svg("bars.svg").expect("whiskers render");
        assert!(svg.matches("<polyline").count() >= 2 || svg.matches("<path").count() >= 2, "{svg}");
        let short = BarChart::new("Bars", groups, Axis::new("value"))
            .with(BarSeries::new("s", vec![1.0, 2.0]).ranges(vec![(0.5, 1.5)]));
        assert!(matches!(short.to_svg("bars.svg"), Err(ReportError::InvalidChart { .. })));
    }
}
