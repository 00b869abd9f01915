//! The series of a chart drawn into its egui_plot plot: lines (with a dot on each point
//! when few), bars grouped or stacked on each other, each with a hover label that gives
//! the exact value, and highlighted points as diamonds, in the palette's colours for the
//! theme. [`plots`](crate::plots) draws the plot around them.

use egui::Stroke;
use egui_plot::{Bar, BarChart, Line, MarkerShape, PlotUi, Points};

use super::charts::{Axis, Chart, Series};
use super::palette::color;
use super::plot_scale::{Scale, number};

/// The opacity of a bar's fill.
const BAR_FILL: f32 = 0.7;

/// Lines of at most this many points get a dot on each.
const MAX_DOTTED_POINTS: usize = 40;

/// What drawing a chart's series needs: the chart, its scale, the bars' base on it, and
/// the theme the colours are for.
pub struct Drawing<'a> {
    pub chart: &'a Chart,
    pub scale: Scale,
    pub base: f64,
    pub dark_mode: bool,
}

impl Drawing<'_> {
    /// A line series, with a dot on each measured point, so a line of one point shows
    /// too (not on a timeline of hundreds of batches).
    pub fn line(&self, plot_ui: &mut PlotUi<'_>, series: &Series) {
        let points: Vec<[f64; 2]> = series
            .points
            .iter()
            .map(|&[x, y]| [x, self.scale.plot_above(y, self.base)])
            .collect();
        let colour = color(series.color, self.dark_mode);
        plot_ui.line(
            Line::new(series.name.clone(), points.clone())
                .color(colour)
                .width(1.5),
        );
        if points.len() <= MAX_DOTTED_POINTS {
            plot_ui.add(
                Points::new(series.name.clone(), points)
                    .color(colour)
                    .radius(2.5),
            );
        }
    }

    /// A bar series, each bar stacked on the `tops` of its group so far when given.
    pub fn bars(
        &self,
        plot_ui: &mut PlotUi<'_>,
        series: &Series,
        width: f64,
        mut tops: Option<&mut Vec<f64>>,
    ) {
        let (scale, base) = (self.scale, self.base);
        // Filled enough to read on either background (egui_plot's default fill is
        // faint, and vanishes on white).
        let stroke = color(series.color, self.dark_mode);
        let fill = stroke.gamma_multiply(BAR_FILL);
        let stacked = tops.is_some();
        let bars = series
            .points
            .iter()
            .map(|&[x, y]| {
                let bar = Bar::new(x, scale.plot_above(y, base) - base)
                    .width(width * 0.95)
                    .fill(fill)
                    .stroke(Stroke::new(1.0, stroke));
                let Some(tops) = tops.as_deref_mut() else {
                    return bar.base_offset(base);
                };
                let group = x.round().max(0.0) as usize;
                if tops.len() <= group {
                    tops.resize(group + 1, 0.0);
                }
                let below = tops[group];
                tops[group] += y;
                bar.base_offset(below)
            })
            .collect();
        let name = series.name.clone();
        let (x_axis, y_unit) = (self.chart.x.clone(), self.chart.y.unit);
        plot_ui.add(
            BarChart::new(series.name.clone(), bars)
                .color(stroke)
                .element_formatter(Box::new(move |bar, _| {
                    let value = if stacked {
                        bar.value
                    } else {
                        scale.value(bar.value + base)
                    };
                    format!(
                        "{name}\n{}: {} {y_unit}",
                        group_name(&x_axis, bar.argument.round()),
                        number(value)
                    )
                })),
        );
    }

    /// A highlighted point (the recommendation, a knee) as a filled diamond.
    pub fn highlight(&self, plot_ui: &mut PlotUi<'_>, highlight: &Series) {
        let points = highlight
            .points
            .iter()
            .map(|&[x, y]| [x, self.scale.plot_above(y, self.base)])
            .collect::<Vec<_>>();
        plot_ui.add(
            Points::new(highlight.name.clone(), points)
                .color(color(highlight.color, self.dark_mode))
                .shape(MarkerShape::Diamond)
                .radius(7.0)
                .filled(true),
        );
    }
}

/// The name of the group at integer position `x`: its own name, else the category and
/// the number.
pub fn group_name(axis: &Axis, x: f64) -> String {
    let named = (x >= 1.0).then(|| axis.names.get(x as usize - 1)).flatten();
    match (named, axis.category) {
        (Some(name), _) => name.clone(),
        (None, Some(category)) => format!("{category} {x}"),
        (None, None) => format!("{x}"),
    }
}
