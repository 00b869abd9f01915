//! Draws a [`Chart`] description with egui_plot: bars or lines in the palette colours,
//! a legend that hides and shows series, axis titles with units, and hover labels with
//! the exact values. It reads the description and nothing else.

use egui::{Color32, Ui};
use egui_plot::{Bar, BarChart, GridMark, HoverPosition, Legend, Line, MarkerShape, Plot, Points};

use super::charts::{Axis, Chart, Mark};

/// Tableau 10: distinct hues that read on dark and light backgrounds.
const PALETTE: [Color32; 10] = [
    Color32::from_rgb(0x4e, 0x79, 0xa7),
    Color32::from_rgb(0xf2, 0x8e, 0x2b),
    Color32::from_rgb(0xe1, 0x57, 0x59),
    Color32::from_rgb(0x76, 0xb7, 0xb2),
    Color32::from_rgb(0x59, 0xa1, 0x4f),
    Color32::from_rgb(0xed, 0xc9, 0x48),
    Color32::from_rgb(0xb0, 0x7a, 0xa1),
    Color32::from_rgb(0xff, 0x9d, 0xa7),
    Color32::from_rgb(0x9c, 0x75, 0x5f),
    Color32::from_rgb(0xba, 0xb0, 0xac),
];

/// The colour of palette entry `index`.
pub fn color(index: usize) -> Color32 {
    PALETTE[index % PALETTE.len()]
}

/// Draws `chart` at `height` points, filling the available width.
pub fn draw(ui: &mut Ui, chart: &Chart, height: f32) {
    ui.label(egui::RichText::new(&chart.title).strong());
    let y_unit = chart.y.unit;
    let x_axis = chart.x.clone();
    let plot = Plot::new(chart.id)
        .height(height)
        .legend(
            Legend::default()
                .position(egui_plot::Corner::RightTop)
                .text_style(egui::TextStyle::Small)
                .follow_insertion_order(true),
        )
        .x_axis_label(chart.x.title())
        .y_axis_label(chart.y.title())
        .x_axis_formatter(move |mark, _| tick(&x_axis, mark))
        .include_y(0.0)
        .include_y(headroom(chart))
        .allow_scroll(false)
        .label_formatter(move |position| hover(position, y_unit));
    let plot = match chart.mark {
        Mark::Bars { .. } => plot.x_grid_spacer(integer_marks).include_x(0.5),
        Mark::Lines => plot,
    };
    plot.show(ui, |plot_ui| {
        for series in &chart.series {
            match chart.mark {
                Mark::Bars { width } => {
                    let bars = series
                        .points
                        .iter()
                        .map(|[x, y]| Bar::new(*x, *y).width(width * 0.95))
                        .collect();
                    let name = series.name.clone();
                    let x_axis = chart.x.clone();
                    plot_ui.add(
                        BarChart::new(series.name.clone(), bars)
                            .color(color(series.color))
                            .element_formatter(Box::new(move |bar, _| {
                                format!(
                                    "{name}\n{}: {:.4} {y_unit}",
                                    group_name(&x_axis, bar.argument.round()),
                                    bar.value
                                )
                            })),
                    );
                }
                Mark::Lines => plot_ui.line(
                    Line::new(series.name.clone(), series.points.clone())
                        .color(color(series.color))
                        .width(1.5),
                ),
            }
        }
        for highlight in &chart.highlights {
            plot_ui.add(
                Points::new(highlight.name.clone(), highlight.points.clone())
                    .color(color(highlight.color))
                    .shape(MarkerShape::Diamond)
                    .radius(7.0)
                    .filled(true),
            );
        }
    });
}

/// The name of the group at integer position `x`: its own name, else the category and
/// the number.
fn group_name(axis: &Axis, x: f64) -> String {
    let named = (x >= 1.0).then(|| axis.names.get(x as usize - 1)).flatten();
    match (named, axis.category) {
        (Some(name), _) => name.clone(),
        (None, Some(category)) => format!("{category} {x}"),
        (None, None) => format!("{x}"),
    }
}

/// A y value above the tallest point that leaves the top of the plot to the legend.
fn headroom(chart: &Chart) -> f64 {
    let tallest = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|[_, y]| *y)
        .fold(0.0, f64::max);
    tallest * (1.0 + 0.12 * chart.series.len().min(8) as f64)
}

/// A tick's text: the category name at integer positions, nothing between them.
fn tick(axis: &Axis, mark: GridMark) -> String {
    if !axis.names.is_empty() {
        return if mark.value.fract() == 0.0 {
            group_name(axis, mark.value)
        } else {
            String::new()
        };
    }
    match axis.category {
        Some(name) if mark.value.fract() == 0.0 && mark.value >= 1.0 => {
            format!("{name} {}", mark.value)
        }
        Some(_) => String::new(),
        None => format!("{}", mark.value),
    }
}

/// Grid marks at integer positions only, for categorical axes.
fn integer_marks(input: egui_plot::GridInput) -> Vec<GridMark> {
    let (min, max) = input.bounds;
    let first = min.ceil().max(1.0) as i64;
    let last = max.floor() as i64;
    (first..=last)
        .map(|value| GridMark {
            value: value as f64,
            step_size: 1.0,
        })
        .collect()
}

fn hover(position: &HoverPosition<'_>, unit: &str) -> Option<String> {
    match position {
        HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } if !plot_name.is_empty() => Some(format!(
            "{plot_name}\nx = {}\ny = {:.4} {unit}",
            position.x, position.y
        )),
        _ => None,
    }
}
