//! The value axis of a chart: linear, or logarithmic when the values span more than
//! [`WIDE_SPAN`] (a 0.01 s bar beside an 8 s one), with tick texts that show enough
//! digits at every scale and grid marks at each power of ten (and 2× and 5× within a
//! decade or two); a linear scale steps by 1, 2 or 5 times a power of ten, so a few
//! ticks always carry a text (egui_plot's own steps jump tenfold, which left a chart of
//! 1–10 ms bars with the one text `0`). A log scale plots `log10(value)`, so everything that writes a value
//! goes through [`Scale::value`] to read the real one back.

use egui_plot::{GridInput, GridMark};

use super::charts::{Chart, Mark};

/// Values spanning more than this factor start on a log scale.
pub const WIDE_SPAN: f64 = 20.0;

/// How a chart maps its values to the plot's y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub log: bool,
}

impl Scale {
    /// Where `value` is drawn (values at or below zero sit at the bottom of a log scale).
    pub fn plot(self, value: f64) -> f64 {
        if self.log {
            value.max(f64::MIN_POSITIVE).log10()
        } else {
            value
        }
    }

    /// Where `value` is drawn on a chart whose bars start at `base` ([`Scale::bar_base`]):
    /// on a log scale never below it, so a zero or negative value (a restart that
    /// saves time) sits at the bottom instead of stretching the axis to 1e-308.
    pub fn plot_above(self, value: f64, base: f64) -> f64 {
        if self.log {
            self.plot(value).max(base)
        } else {
            value
        }
    }

    /// The value drawn at `y`.
    pub fn value(self, y: f64) -> f64 {
        if self.log { 10f64.powf(y) } else { y }
    }

    /// Where bars start: zero, or the decade below the smallest value on a log scale.
    pub fn bar_base(self, chart: &Chart) -> f64 {
        if !self.log {
            return 0.0;
        }
        positive_values(chart)
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor()
    }

    /// The text of the y tick at `mark`.
    pub fn tick(self, mark: GridMark) -> String {
        if self.log {
            number(self.value(mark.value))
        } else {
            let decimals = (-mark.step_size.log10().floor()).max(0.0) as usize;
            format!("{:.*}", decimals, mark.value)
        }
    }
}

/// Whether a log scale can show `chart` (not stacked bars, whose heights add up).
pub fn can_be_log(chart: &Chart) -> bool {
    !matches!(chart.mark, Mark::Stacked { .. }) && positive_values(chart).next().is_some()
}

/// Whether the chart's positive values span more than [`WIDE_SPAN`].
pub fn spans_widely(chart: &Chart) -> bool {
    let (low, high) = positive_values(chart).fold((f64::INFINITY, 0.0f64), |(low, high), v| {
        (low.min(v), high.max(v))
    });
    can_be_log(chart) && high > low * WIDE_SPAN
}

fn positive_values(chart: &Chart) -> impl Iterator<Item = f64> + '_ {
    chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|[_, y]| *y)
        .filter(|y| *y > 0.0)
}

/// A value with four significant digits and no trailing zeros, never rounded to a bare
/// `0`: `0.001234`, `0.45`, `12.35`, `4500`.
pub fn number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor();
    let decimals = (3.0 - magnitude).max(0.0) as usize;
    let text = format!("{:.*}", decimals, value);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// Points between x tick texts of plain numbers (worker counts, group numbers).
pub const NUMBER_SPACING: f32 = 20.0;

/// Points between x tick texts such as `epoch 12`.
const TEXT_SPACING: f32 = 68.0;

/// Grid marks on whole numbers (worker counts, batch and epoch numbers): every one where
/// they stand far enough apart for a tick text, else every 2nd, 5th, 10th, 20th… All
/// share one step size, so each gets its text (egui_plot's default marks leave a narrow
/// plot with a lone `0`).
pub fn whole_marks(input: GridInput) -> Vec<GridMark> {
    spaced_whole_marks(input, TEXT_SPACING)
}

/// Whole-number grid marks at least `points` apart.
pub fn spaced_whole_marks(input: GridInput, points: f32) -> Vec<GridMark> {
    // `base_step_size` spans 8 points.
    let least = input.base_step_size * f64::from(points) / 8.0;
    let (min, max) = input.bounds;
    let mut step = 1.0;
    for factor in [2.0, 2.5, 2.0].iter().cycle() {
        if step >= least {
            break;
        }
        step *= factor;
    }
    steps_between(min, max, step)
        .map(|i| GridMark {
            value: i as f64 * step,
            step_size: step,
        })
        .collect()
}

/// The most marks one step of a scale makes: a plot holds a few dozen, and bounds far
/// past anything measured (a zoom out without end, a value no run gives) must not make
/// billions.
const MOST_MARKS: f64 = 1_000.0;

/// The multiples of `step` from `min` to `max`, by index; none where the bounds are not
/// finite or would make more than [`MOST_MARKS`].
fn steps_between(min: f64, max: f64, step: f64) -> impl Iterator<Item = i64> {
    let (first, last) = ((min / step).ceil(), (max / step).floor());
    let fits = first.is_finite() && last.is_finite() && last - first <= MOST_MARKS;
    fits.then_some(first as i64..=last as i64)
        .into_iter()
        .flatten()
}

/// Grid marks of a log scale: every power of ten, and 2× and 5× while at most two
/// decades show.
pub fn log_marks(input: GridInput) -> Vec<GridMark> {
    let (min, max) = input.bounds;
    // Every decade that shows, and the one below (whose 2× and 5× may show).
    let decades = steps_between(min - 1.0, max + 1.0, 1.0);
    let fine = max - min <= 2.0;
    let mut marks = Vec::new();
    for decade in decades {
        marks.push(GridMark {
            value: decade as f64,
            step_size: 1.0,
        });
        if fine {
            for factor in [2.0f64, 5.0] {
                marks.push(GridMark {
                    value: decade as f64 + factor.log10(),
                    step_size: 0.1,
                });
            }
        }
    }
    marks.retain(|m| m.value >= min && m.value <= max);
    marks
}

/// Grid marks of a linear scale: three steps of the 1–2–5 ladder, the finest at least
/// egui_plot's minimum line spacing (`base_step_size`) and each next one at least three
/// times the one before and a multiple of it, so the middle step is far enough apart
/// for tick texts.
pub fn linear_marks(input: GridInput) -> Vec<GridMark> {
    let base = input.base_step_size.abs();
    if base < f64::EPSILON || !base.is_finite() {
        return Vec::new();
    }
    let fine = ladder_step_at_least(base);
    let middle = ladder_step_at_least(fine * 3.0);
    let coarse = ladder_step_at_least(middle * 3.0);
    let (min, max) = input.bounds;
    let mut marks: Vec<GridMark> = Vec::new();
    for step in [coarse, middle, fine] {
        for index in steps_between(min, max, step) {
            let value = index as f64 * step;
            // A value on a coarser step keeps that step (its text is more prominent).
            if !marks.iter().any(|m| (m.value - value).abs() < step * 1e-6) {
                marks.push(GridMark {
                    value,
                    step_size: step,
                });
            }
        }
    }
    marks
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `value`.
fn ladder_step_at_least(value: f64) -> f64 {
    let decade = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|factor| factor * decade)
        .find(|step| *step >= value * (1.0 - 1e-9))
        .unwrap_or(10.0 * decade)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::{Axis, Series};

    #[test]
    fn linear_marks_give_millisecond_bars_texts_above_zero() {
        // A 130-point plot of 0–12 ms: egui_plot asks for lines at least 8 points apart.
        let points_per_second = 130.0 / 0.012;
        let marks = linear_marks(GridInput {
            bounds: (0.0, 0.012),
            base_step_size: 8.0 / points_per_second,
        });
        // Tick texts need 20 points or more between marks of one step.
        let labelled: Vec<f64> = marks
            .iter()
            .filter(|m| m.step_size * points_per_second >= 20.0)
            .map(|m| m.value)
            .collect();
        assert!(labelled.len() >= 3, "{labelled:?}");
        assert!(labelled.iter().any(|v| *v > 0.0 && *v < 0.012));
        let text = Scale { log: false }.tick(GridMark {
            value: 0.005,
            step_size: 0.005,
        });
        assert_eq!(text, "0.005");
    }

    #[test]
    fn linear_steps_climb_the_one_two_five_ladder() {
        assert_eq!(ladder_step_at_least(0.00074), 0.001);
        assert_eq!(ladder_step_at_least(0.0013), 0.002);
        assert_eq!(ladder_step_at_least(3.0), 5.0);
        assert_eq!(ladder_step_at_least(6.0), 10.0);
        assert_eq!(ladder_step_at_least(20.0), 20.0);
        let marks = linear_marks(GridInput {
            bounds: (0.0, 100.0),
            base_step_size: 1.3,
        });
        let steps: std::collections::BTreeSet<u64> = marks
            .iter()
            .map(|m| (m.step_size * 1000.0) as u64)
            .collect();
        assert_eq!(
            steps.into_iter().collect::<Vec<_>>(),
            vec![2000, 10000, 50000]
        );
    }

    fn chart(values: &[f64], mark: Mark) -> Chart {
        let axis = Axis::numeric("seconds", "s");
        Chart {
            id: loaderbench_present::views::ChartId::FirstBatch,
            title: String::new(),
            x: axis.clone(),
            y: axis,
            mark,
            series: vec![Series {
                name: "a".to_owned(),
                color: 0,
                points: values.iter().map(|v| [1.0, *v]).collect(),
            }],
            highlights: Vec::new(),
        }
    }

    #[test]
    fn a_wide_span_starts_on_a_log_scale_but_stacks_never_do() {
        let bars = Mark::Bars { width: 0.4 };
        assert!(spans_widely(&chart(&[0.01, 8.0], bars)));
        assert!(!spans_widely(&chart(&[0.5, 8.0, 0.0], bars)));
        assert!(!spans_widely(&chart(
            &[0.01, 8.0],
            Mark::Stacked { width: 0.6 }
        )));
    }

    #[test]
    fn log_values_round_trip_and_bars_start_a_decade_below() {
        let scale = Scale { log: true };
        assert!((scale.value(scale.plot(0.02)) - 0.02).abs() < 1e-12);
        let chart = chart(&[0.02, 8.0], Mark::Bars { width: 0.4 });
        assert_eq!(scale.bar_base(&chart), -2.0);
        assert_eq!(Scale { log: false }.bar_base(&chart), 0.0);
        assert_eq!(
            scale.plot_above(-0.5, -2.0),
            -2.0,
            "a negative value at the base"
        );
        assert_eq!(Scale { log: false }.plot_above(-0.5, 0.0), -0.5);
    }

    #[test]
    fn ticks_show_small_values_instead_of_zero() {
        let linear = Scale { log: false };
        let mark = |value, step_size| GridMark { value, step_size };
        assert_eq!(linear.tick(mark(0.002, 0.001)), "0.002");
        assert_eq!(linear.tick(mark(20.0, 10.0)), "20");
        assert_eq!(Scale { log: true }.tick(mark(-2.0, 1.0)), "0.01");
        assert_eq!(number(0.0012341), "0.001234");
        assert_eq!(number(0.45), "0.45");
        assert_eq!(number(4500.0), "4500");
    }

    #[test]
    fn whole_marks_fall_on_every_number_while_far_enough_apart() {
        let marks = |bounds, base_step_size| {
            whole_marks(GridInput {
                bounds,
                base_step_size,
            })
            .iter()
            .map(|m| m.value)
            .collect::<Vec<_>>()
        };
        assert_eq!(marks((-0.2, 4.2), 0.05), [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(marks((0.0, 100.0), 1.0).len(), 11, "every 10th");
    }

    #[test]
    fn log_marks_fall_on_decades_and_within_them_when_few() {
        let marks = |bounds| {
            log_marks(GridInput {
                bounds,
                base_step_size: 0.01,
            })
            .iter()
            .map(|m| m.value)
            .collect::<Vec<_>>()
        };
        assert_eq!(marks((-3.5, 1.5)), [-3.0, -2.0, -1.0, 0.0, 1.0]);
        let fine = marks((-0.1, 1.0));
        let expected = [0.0, 2f64.log10(), 5f64.log10(), 1.0];
        assert_eq!(fine, expected, "1, 2, 5 and 10");
    }

    #[test]
    fn bounds_past_anything_measured_make_no_marks_rather_than_billions() {
        // A results file with an epoch of 1e307 s, or -1e308 s before its check: the
        // decades ran from i64::MIN to i64::MAX.
        let input = |bounds| GridInput {
            bounds,
            base_step_size: 0.01,
        };
        for bounds in [
            (-308.0, 307.0e10),
            (-1e308, 1e308),
            (f64::NAN, 1.0),
            (0.0, f64::INFINITY),
        ] {
            assert!(log_marks(input(bounds)).is_empty(), "{bounds:?}");
            assert!(whole_marks(input(bounds)).is_empty(), "{bounds:?}");
            assert!(linear_marks(input(bounds)).len() <= 3_000, "{bounds:?}");
        }
        assert_eq!(log_marks(input((-308.0, 307.0))).len(), 616);
    }
}
