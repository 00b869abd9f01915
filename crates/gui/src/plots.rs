//! Draws a [`Chart`] description with egui_plot: bars (grouped or stacked) or lines in
//! the palette colours (darkened on a light theme), a legend beside the plot (never over
//! the data) that hides and shows series, a log scale toggle (`plot_scale`), axis titles
//! with units, config names under their groups or, where they do not fit, numbers with a
//! key under the plot, and hover labels with the exact values (the series themselves
//! are drawn by [`plot_series`](crate::plot_series)). It reads the description
//! and nothing else; what the user chose (log scale, hidden series) lives in egui's memory
//! under the chart's id, and [`view`] reads it back.

use egui::{Color32, Rangef, Rect, Ui};
use egui_plot::{AxisHints, GridMark, HoverPosition, Plot};

use super::charts::{Axis, Chart, Mark};
use super::palette::color;
use super::plot_scale::{
    NUMBER_SPACING, Scale, can_be_log, linear_marks, log_marks, number, spaced_whole_marks,
    spans_widely, whole_marks,
};
use super::plot_series::{Drawing, group_name};
use loaderbench_present::views::ChartId;

/// The legend's width beside the plot, in points.
const LEGEND_WIDTH: f32 = 170.0;

/// What a plot shows of its chart now: on a log scale or not, and the series its legend
/// hid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartView {
    pub log: bool,
    pub hidden: Vec<String>,
}

/// What the plot of `chart` shows: the user's choices so far, else the defaults (a log
/// scale while the values span widely, every series shown).
pub fn view(ctx: &egui::Context, chart: &Chart) -> ChartView {
    let chosen: Option<bool> = ctx.data_mut(|d| d.get_temp(log_id(chart.id)));
    ChartView {
        log: can_be_log(chart) && chosen.unwrap_or_else(|| spans_widely(chart)),
        hidden: ctx.data_mut(|d| d.get_temp(hidden_id(chart.id)).unwrap_or_default()),
    }
}

fn log_id(chart: ChartId) -> egui::Id {
    egui::Id::unique(("log scale", chart))
}

fn hidden_id(chart: ChartId) -> egui::Id {
    egui::Id::unique(("hidden series", chart))
}

/// Draws `chart` at `height` points, filling the available width: the title with a log
/// scale toggle (on when the values span widely), the plot, its legend beside it, and
/// the key of numbered groups under it when their names do not fit; returns where.
pub fn draw(ui: &mut Ui, chart: &Chart, height: f32) -> Rect {
    draw_with(ui, chart, height, |_| {})
}

/// Draws `chart` as [`draw`] does, with `switches` drawn after its title.
pub fn draw_with(ui: &mut Ui, chart: &Chart, height: f32, switches: impl FnOnce(&mut Ui)) -> Rect {
    ui.scope(|ui| draw_within(ui, chart, height, switches))
        .response
        .rect
}

fn draw_within(ui: &mut Ui, chart: &Chart, height: f32, switches: impl FnOnce(&mut Ui)) {
    let mut view = view(ui.ctx(), chart);
    ui.horizontal(|ui| {
        ui.label(egui::RichText::new(&chart.title).strong());
        switches(ui);
        if can_be_log(chart)
            && ui
                .checkbox(&mut view.log, "log scale")
                .on_hover_text("Each step on the value axis multiplies by ten")
                .changed()
        {
            ui.data_mut(|d| d.insert_temp(log_id(chart.id), view.log));
        }
    });
    let scale = Scale { log: view.log };
    let legend_width = LEGEND_WIDTH.min(ui.available_width() * 0.3);
    let mut ticks = GroupTicks::Names;
    ui.horizontal_top(|ui| {
        let width = (ui.available_width() - legend_width - ui.spacing().item_spacing.x).max(100.0);
        ticks = group_ticks(ui, &chart.x, width);
        ui.allocate_ui(egui::vec2(width, height), |ui| {
            plot(ui, chart, height, scale, &view.hidden, ticks);
        });
        if legend(ui, chart, height, &mut view.hidden) {
            ui.data_mut(|d| d.insert_temp(hidden_id(chart.id), view.hidden));
        }
    });
    if ticks == GroupTicks::Numbers {
        group_key(ui, &chart.x);
    }
}

/// How a categorical x axis names its groups: by name where every name fits under its
/// group, else by number, with a key under the plot (egui_plot leaves out a tick text
/// wider than its group, so long config names would leave the axis bare).
#[derive(Debug, Clone, Copy, PartialEq)]
enum GroupTicks {
    Names,
    Numbers,
}

/// Whether the names of `axis` fit under their groups in a plot `width` points wide.
fn group_ticks(ui: &Ui, axis: &Axis, width: f32) -> GroupTicks {
    if axis.names.is_empty() {
        return GroupTicks::Names;
    }
    let font = egui::TextStyle::Body.resolve(ui.style());
    let widest = axis
        .names
        .iter()
        .map(|name| {
            let galley = ui
                .painter()
                .layout_no_wrap(name.clone(), font.clone(), Color32::WHITE);
            galley.size().x
        })
        .fold(0.0, f32::max);
    // The value axis takes some 60 points, and each name needs a margin.
    let per_group = (width - 60.0) / (axis.names.len() as f32 + 0.5);
    if widest + 8.0 <= per_group {
        GroupTicks::Names
    } else {
        GroupTicks::Numbers
    }
}

/// The key of numbered groups: each number with its name, wrapped across the width.
fn group_key(ui: &mut Ui, axis: &Axis) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 12.0;
        for (index, name) in axis.names.iter().enumerate() {
            let text = egui::RichText::new(format!("{} {name}", index + 1)).small();
            ui.add(egui::Label::new(text).extend());
        }
    });
}

/// The plot itself, without the series named in `hidden`.
fn plot(
    ui: &mut Ui,
    chart: &Chart,
    height: f32,
    scale: Scale,
    hidden: &[String],
    ticks: GroupTicks,
) {
    let dark_mode = ui.visuals().dark_mode;
    let shown = |name: &String| !hidden.contains(name);
    plot_frame(chart, height, scale, ticks).show(ui, |plot_ui| {
        // The top of each stacked bar so far, by group.
        let mut tops: Vec<f64> = Vec::new();
        let base = scale.bar_base(chart);
        let draw = Drawing {
            chart,
            scale,
            base,
            dark_mode,
        };
        for series in chart.series.iter().filter(|s| shown(&s.name)) {
            match chart.mark {
                Mark::Bars { width } => draw.bars(plot_ui, series, width, None),
                Mark::Stacked { width } => draw.bars(plot_ui, series, width, Some(&mut tops)),
                Mark::Lines => draw.line(plot_ui, series),
            }
        }
        for highlight in chart.highlights.iter().filter(|s| shown(&s.name)) {
            draw.highlight(plot_ui, highlight);
        }
    });
}

/// The plot's axes, their titles and ticks, its hover label and the range it shows.
fn plot_frame(chart: &Chart, height: f32, scale: Scale, ticks: GroupTicks) -> Plot<'static> {
    let y_unit = chart.y.unit;
    let x_axis = chart.x.clone();
    // Numbers need less room than egui_plot's default spacing of x tick texts.
    let x_hints = AxisHints::new_x().label_spacing(Rangef::new(14.0, 18.0));
    let plot = Plot::new(chart.id.name())
        .height(height)
        .custom_x_axes(vec![x_hints])
        .x_axis_label(chart.x.title())
        .y_axis_label(chart.y.title())
        .x_axis_formatter(move |mark, _| tick(&x_axis, mark, ticks))
        .y_axis_formatter(move |mark, _| scale.tick(mark))
        .include_y(scale.bar_base(chart))
        .allow_scroll(false)
        .label_formatter(move |position| hover(position, y_unit, scale));
    let plot = if scale.log {
        plot.y_grid_spacer(log_marks)
            .include_y(scale.plot(tallest(chart)) + 0.1)
    } else {
        plot.y_grid_spacer(linear_marks)
            .include_y(tallest(chart) * 1.05)
    };
    match chart.mark {
        Mark::Bars { .. } | Mark::Stacked { .. } => {
            plot.x_grid_spacer(integer_marks).include_x(0.5)
        }
        Mark::Lines => plot.x_grid_spacer(whole_marks),
    }
}

/// The legend beside the plot: a collapsible list of the series in their colours, a
/// click hiding or showing one, scrolling when long. Returns whether `hidden` changed.
fn legend(ui: &mut Ui, chart: &Chart, height: f32, hidden: &mut Vec<String>) -> bool {
    let mut changed = false;
    let dark_mode = ui.visuals().dark_mode;
    ui.vertical(|ui| {
        let width = ui.available_width();
        ui.set_width(width);
        ui.set_max_width(width);
        egui::CollapsingHeader::new(egui::RichText::new("legend").small())
            .id_salt(("legend", chart.id))
            .default_open(true)
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt(("legend scroll", chart.id))
                    .auto_shrink([false, true])
                    .max_height(height - 24.0)
                    .show(ui, |ui| {
                        for series in chart.series.iter().chain(&chart.highlights) {
                            let off = hidden.contains(&series.name);
                            let entry =
                                legend_entry(ui, &series.name, color(series.color, dark_mode), off);
                            if entry.clicked() {
                                if off {
                                    hidden.retain(|name| *name != series.name);
                                } else {
                                    hidden.push(series.name.clone());
                                }
                                changed = true;
                            }
                        }
                    });
            });
    });
    changed
}

/// One legend line: a swatch in the series' colour (hollow while hidden) and its name,
/// clickable.
fn legend_entry(ui: &mut Ui, name: &str, fill: Color32, off: bool) -> egui::Response {
    ui.horizontal(|ui| {
        let (swatch, _) = ui.allocate_exact_size(egui::vec2(9.0, 9.0), egui::Sense::hover());
        if off {
            let stroke = egui::Stroke::new(1.0, fill);
            ui.painter()
                .rect_stroke(swatch, 2.0, stroke, egui::StrokeKind::Inside);
        } else {
            ui.painter().rect_filled(swatch, 2.0, fill);
        }
        let mut text = egui::RichText::new(name).small();
        if off {
            text = text.weak();
        }
        // Truncated to the legend's width (a long name would widen the whole view);
        // the hover shows it whole.
        ui.add(
            egui::Label::new(text)
                .truncate()
                .sense(egui::Sense::click()),
        )
        .on_hover_text(format!("{name}\nClick to hide or show"))
    })
    .inner
}

/// The tallest point, markers included (the tallest stack of stacked bars).
fn tallest(chart: &Chart) -> f64 {
    let markers = chart.highlights.iter().flat_map(|s| &s.points);
    let highest_marker = markers.map(|[_, y]| *y).fold(0.0, f64::max);
    let points = chart.series.iter().flat_map(|s| &s.points);
    if let Mark::Stacked { .. } = chart.mark {
        let mut stacks: Vec<[f64; 2]> = Vec::new();
        for &[x, y] in points {
            match stacks.iter_mut().find(|stack| stack[0] == x) {
                Some(stack) => stack[1] += y,
                None => stacks.push([x, y]),
            }
        }
        stacks
            .iter()
            .map(|[_, y]| *y)
            .fold(highest_marker, f64::max)
    } else {
        points.map(|[_, y]| *y).fold(highest_marker, f64::max)
    }
}

/// A tick's text: the group's name or number at integer positions, nothing between them.
fn tick(axis: &Axis, mark: GridMark, ticks: GroupTicks) -> String {
    let whole = mark.value.fract() == 0.0;
    if !axis.names.is_empty() {
        return match ticks {
            _ if !whole => String::new(),
            GroupTicks::Names => group_name(axis, mark.value),
            GroupTicks::Numbers => format!("{}", mark.value),
        };
    }
    match axis.category {
        Some(name) if whole && mark.value >= 1.0 => format!("{name} {}", mark.value),
        Some(_) => String::new(),
        None => format!("{}", mark.value),
    }
}

/// Grid marks at whole positions from 1, for categorical axes: every one while they
/// stand far enough apart for a number, else every 2nd, 5th, 10th…
fn integer_marks(input: egui_plot::GridInput) -> Vec<GridMark> {
    let mut marks = spaced_whole_marks(input, NUMBER_SPACING);
    marks.retain(|mark| mark.value >= 1.0);
    marks
}

fn hover(position: &HoverPosition<'_>, unit: &str, scale: Scale) -> Option<String> {
    match position {
        HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } if !plot_name.is_empty() => Some(format!(
            "{plot_name}\nx = {}\ny = {} {unit}",
            number(position.x),
            number(scale.value(position.y))
        )),
        _ => None,
    }
}
