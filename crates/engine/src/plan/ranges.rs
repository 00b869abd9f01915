//! The stated range of every number a preset holds, checked when the plan is made, so
//! that no value reaches a conversion or an allocation that it would break: a timeout
//! of 1e20 s is not a `Duration`, a shuffle buffer of 10¹⁵ samples is not a capacity.
//! [`RANGES`] is the one table (its rows are listed in `docs/limits.md`, a test holds
//! the two together); each value outside its row is an error naming the field, the
//! value and the range. A sweep's grid is counted before it is expanded, against
//! [`MOST_CONFIGS`].

use super::Config;
use crate::error::FieldError;
use crate::preset::{IntraOpThreads, Preset};
use crate::step::StepSpec;
use crate::transform::Op;

/// Where a number may lie: from `min` to `max` inclusive, in `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumberRange {
    /// The field as a preset names it (`step` for `fixed(MS)`, `pipeline` for an op's).
    pub field: &'static str,
    /// What the number is, when the field holds several.
    pub what: &'static str,
    pub min: f64,
    pub max: f64,
    pub unit: &'static str,
}

const fn range(
    field: &'static str,
    what: &'static str,
    min: f64,
    max: f64,
    unit: &'static str,
) -> NumberRange {
    NumberRange {
        field,
        what,
        min,
        max,
        unit,
    }
}

/// Every number of a preset, with its range.
pub const RANGES: &[NumberRange] = &[
    range("epochs", "epochs", 1.0, 10_000.0, "epochs"),
    range("repeats", "repeats", 1.0, 1_000.0, "repeats"),
    range("planned_epochs", "epochs", 1.0, 1_000_000.0, "epochs"),
    range("samples", "samples", 1.0, 1e10, "samples"),
    range("worker_timeout_s", "timeout", 0.1, 86_400.0, "seconds"),
    range("window_s", "window", 0.1, 3_600.0, "seconds"),
    range("resolve_for_s", "time", 0.0, 86_400.0, "seconds"),
    range(
        "memory_limit",
        "limit",
        16_777_216.0,
        1_125_899_906_842_624.0,
        "bytes",
    ),
    range("step", "fixed(MS)", 0.0, 3_600_000.0, "milliseconds"),
    range("step", "mlp hidden", 1.0, 65_536.0, "units"),
    range("step", "model lr", 1e-12, 1e6, ""),
    range("normalize", "mean", -1e6, 1e6, ""),
    range("normalize", "std", 1e-12, 1e6, ""),
    range(
        "dataset.shuffle_buffer",
        "samples",
        0.0,
        1_000_000.0,
        "samples",
    ),
    range("dataset.image_size", "side", 1.0, 16_384.0, "pixels"),
    range("batch_size", "samples", 1.0, 1_048_576.0, "samples"),
    range("num_workers", "workers", 0.0, 1_024.0, "workers"),
    range(
        "prefetch_factor",
        "batches",
        1.0,
        1_024.0,
        "batches per worker",
    ),
    range("ranks", "ranks", 1.0, 256.0, "processes"),
    range("intra_op_threads", "threads", 1.0, 1_024.0, "threads"),
    range("pipeline", "rotate degrees", -360.0, 360.0, "degrees"),
    range("pipeline", "elastic alpha/sigma", 0.0, 1e4, "pixels"),
    range("pipeline", "gaussian_blur kernel", 1.0, 255.0, "pixels"),
    range("pipeline", "gaussian_blur sigma", 1e-6, 1e3, "pixels"),
    range(
        "pipeline",
        "crop/resize side or padding",
        0.0,
        16_384.0,
        "pixels",
    ),
    range("pipeline", "cost", 0.0, 10_000_000.0, "µs per sample"),
];

/// The most configs one preset's sweep may make: a grid is the product of its lists, so
/// a few long lists make more configs than any run could measure.
pub const MOST_CONFIGS: u64 = 10_000;

fn row(field: &str, what: &str) -> &'static NumberRange {
    RANGES
        .iter()
        .find(|r| r.field == field && r.what == what)
        .expect("every checked number has its row in RANGES")
}

/// `value` as a reader takes it in: `1e25` and `1e-12` rather than 26 digits or 12
/// decimals; anything between as Rust writes it (`86400`, `0.1`).
fn written(value: f64) -> String {
    let size = value.abs();
    if size != 0.0 && size.is_finite() && !(1e-4..1e12).contains(&size) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// Checks `value` of `field_name` (`what`, when it holds several numbers) against its row
/// of [`RANGES`]; also for counts that a results file claims.
pub fn check_number(field_name: &str, what: &str, value: f64) -> Result<(), FieldError> {
    let range = row(field_name, what);
    if value.is_finite() && value >= range.min && value <= range.max {
        return Ok(());
    }
    let thing = if range.what == field_name || field_name.ends_with(range.what) {
        String::new()
    } else {
        format!("{} ", range.what)
    };
    // Sizes as they are typed (`16MiB`), other numbers with their unit after the range.
    let (write, unit): (fn(f64) -> String, &str) = match range.unit {
        "bytes" => (written_size, ""),
        unit => (written, unit),
    };
    Err(FieldError::new(
        None,
        field_name,
        format!(
            "{thing}{} is out of range: it must be from {} to {}{}{unit} (see docs/limits.md)",
            write(value),
            write(range.min),
            write(range.max),
            if unit.is_empty() { "" } else { " " },
        ),
    ))
}

/// A size in bytes as a reader takes it in: `16.0 MiB`, `1000 B`; a fraction of a byte
/// or a size past any machine's as a number.
fn written_size(bytes: f64) -> String {
    if bytes.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&bytes) {
        bytesize::ByteSize::b(bytes as u64).to_string()
    } else {
        written(bytes)
    }
}

/// What is wrong with `step`, or `None`: its numbers against their rows of [`RANGES`]
/// (`fixed(inf)` and `fixed(1e25)` alike), then what the step itself needs
/// ([`StepSpec::problem`]). The plan and the app's step fields both check a step here.
pub fn step_problem(step: &StepSpec) -> Option<String> {
    let numbers = match step {
        StepSpec::Fixed(ms) => check_number("step", "fixed(MS)", *ms),
        StepSpec::Mlp { hidden } => check_number("step", "mlp hidden", *hidden as f64),
        StepSpec::Model { lr, .. } => check_number("step", "model lr", *lr),
        StepSpec::None | StepSpec::Python { .. } => Ok(()),
    };
    numbers.err().map(|e| e.problem).or_else(|| step.problem())
}

/// Checks every number `preset` holds outside its sweep lists against [`RANGES`], and
/// counts its grid against [`MOST_CONFIGS`], before anything is expanded or converted.
pub(super) fn check_preset_numbers(preset: &Preset) -> Result<(), FieldError> {
    let count = |v: usize| v as f64;
    check_number("epochs", "epochs", count(preset.epochs))?;
    check_number("repeats", "repeats", count(preset.repeats))?;
    check_number("planned_epochs", "epochs", count(preset.planned_epochs))?;
    if let Some(samples) = preset.samples {
        check_number("samples", "samples", count(samples))?;
    }
    check_number("worker_timeout_s", "timeout", preset.worker_timeout_s)?;
    check_number("window_s", "window", preset.window_s)?;
    check_number("resolve_for_s", "time", preset.resolve_for_s)?;
    if let Some(limit) = preset.memory_limit {
        check_number("memory_limit", "limit", limit.as_u64() as f64)?;
    }
    for &mean in &preset.normalize.mean {
        check_number("normalize", "mean", mean)?;
    }
    for &std in &preset.normalize.std {
        check_number("normalize", "std", std)?;
    }
    check_number(
        "dataset.shuffle_buffer",
        "samples",
        count(preset.dataset.shuffle_buffer),
    )?;
    for side in preset.dataset.image_size {
        check_number("dataset.image_size", "side", count(side))?;
    }
    let lists = super::knobs::lists(preset);
    let configs = lists
        .iter()
        .map(|(_, values)| values.len() as u64)
        .try_fold(1u64, u64::checked_mul);
    let extra = preset.extra_configs.len() as u64;
    if extra > MOST_CONFIGS {
        return Err(FieldError::new(
            None,
            "extra_configs",
            format!("lists {extra} configs, more than the {MOST_CONFIGS} a preset may measure"),
        ));
    }
    if configs.is_none_or(|n| n > MOST_CONFIGS - extra) {
        let longest = lists
            .iter()
            .max_by_key(|(_, values)| values.len())
            .map_or("num_workers", |(name, _)| name);
        return Err(FieldError::new(
            None,
            longest,
            format!(
                "the sweep's lists make more than {MOST_CONFIGS} configs with \
                 extra_configs (the product of their lengths, and {extra} more); sweep \
                 fewer values at once, or list the configs you want in extra_configs"
            ),
        ));
    }
    Ok(())
}

/// Checks every number of one expanded config (a grid point or an extra config) against
/// [`RANGES`].
pub(super) fn check_config_numbers(config: &Config) -> Result<(), FieldError> {
    let count = |v: usize| v as f64;
    check_number("batch_size", "samples", count(config.batch_size))?;
    check_number("num_workers", "workers", count(config.num_workers))?;
    check_number("prefetch_factor", "batches", count(config.prefetch_factor))?;
    check_number("ranks", "ranks", count(config.ranks))?;
    if let IntraOpThreads::Count(threads) = config.intra_op_threads {
        check_number("intra_op_threads", "threads", count(threads))?;
    }
    for op in config.pipeline.ops() {
        check_op(&op)?;
    }
    Ok(())
}

fn check_op(op: &Op) -> Result<(), FieldError> {
    let pixels = |v: usize| check_number("pipeline", "crop/resize side or padding", v as f64);
    match op {
        Op::Rotate { degrees } => check_number("pipeline", "rotate degrees", *degrees),
        Op::Elastic { alpha, sigma } => {
            check_number("pipeline", "elastic alpha/sigma", *alpha)?;
            check_number("pipeline", "elastic alpha/sigma", *sigma)
        }
        Op::GaussianBlur { kernel, sigma } => {
            check_number("pipeline", "gaussian_blur kernel", *kernel as f64)?;
            check_number("pipeline", "gaussian_blur sigma", sigma[0])?;
            check_number("pipeline", "gaussian_blur sigma", sigma[1])
        }
        Op::Crop { size, padding } => {
            pixels(size[0])?;
            pixels(size[1])?;
            pixels(*padding)
        }
        Op::Resize { size } => {
            pixels(size[0])?;
            pixels(size[1])
        }
        Op::Cost { micros_per_sample } => {
            check_number("pipeline", "cost", *micros_per_sample as f64)
        }
        Op::Flip { .. } | Op::Normalize => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::Preset;

    fn problem(edit: impl FnOnce(&mut Preset)) -> String {
        let mut preset = Preset::default();
        edit(&mut preset);
        super::super::Plan::from_preset(&preset, None)
            .unwrap_err()
            .to_string()
    }

    /// A step's numbers have one check, the plan's and the app's: `fixed(inf)` was refused
    /// by the step's own words and `fixed(1e25)` by the range's.
    #[test]
    fn a_step_s_numbers_are_checked_against_their_ranges_alone() {
        let refused = |step: StepSpec| step_problem(&step).unwrap_or_default();
        for ms in [f64::INFINITY, f64::NAN, -1.0, 1e25] {
            let problem = refused(StepSpec::Fixed(ms));
            assert!(
                problem.starts_with("fixed(MS) ")
                    && problem.ends_with(" is out of range: it must be from 0 to 3600000 milliseconds (see docs/limits.md)"),
                "{problem}"
            );
        }
        assert!(refused(StepSpec::Mlp { hidden: 0 }).starts_with("mlp hidden 0 is out of range"));
        let model = |lr| StepSpec::Model {
            path: "m.pt".into(),
            lr,
        };
        assert_eq!(
            refused(model(0.0)),
            "model lr 0 is out of range: it must be from 1e-12 to 1000000 (see docs/limits.md)"
        );
        assert_eq!(step_problem(&model(0.1)), None);
        assert!(refused(model(f64::NAN)).starts_with("model lr NaN is out of range"));
        assert!(
            refused(StepSpec::Model {
                path: "".into(),
                lr: 0.1
            })
            .contains("give the path")
        );
    }

    #[test]
    fn numbers_out_of_range_are_named_with_their_range() {
        assert_eq!(
            problem(|p| p.worker_timeout_s = 1e20),
            "field `worker_timeout_s`: timeout 1e20 is out of range: it must be from 0.1 to \
             86400 seconds (see docs/limits.md)"
        );
        assert_eq!(
            problem(|p| p.step = StepSpec::Fixed(1e25)),
            "field `step`: fixed(MS) 1e25 is out of range: it must be from 0 to 3600000 \
             milliseconds (see docs/limits.md)"
        );
        assert_eq!(
            problem(|p| p.memory_limit = Some(bytesize::ByteSize::kib(1))),
            "field `memory_limit`: 1.0 KiB is out of range: it must be from 16.0 MiB to 1.0 \
             PiB (see docs/limits.md)"
        );
        assert!(problem(|p| p.dataset.shuffle_buffer = usize::MAX).contains("shuffle_buffer"));
        assert!(problem(|p| p.window_s = f64::INFINITY).contains("window_s"));
        assert!(problem(|p| p.normalize.std = vec![f64::NAN]).contains("normalize"));
        assert!(
            problem(
                |p| p.pipeline = vec![crate::transform::PipelineSpec::Custom {
                    name: "big".into(),
                    ops: vec![Op::Resize { size: [1 << 20, 8] }],
                }]
            )
            .contains("crop/resize side")
        );
        assert!(super::super::Plan::from_preset(&Preset::default(), None).is_ok());
    }

    #[test]
    fn a_grid_is_counted_before_it_is_expanded() {
        let err = problem(|p| {
            p.batch_size = (1..=200).collect();
            p.num_workers = (0..=100).collect();
        });
        assert!(
            err.contains("field `batch_size`: the sweep's lists make more than 10000 configs"),
            "{err}"
        );
        let extra = problem(|p| {
            p.extra_configs = vec![crate::preset::ConfigPoint {
                batch_size: Some(1 << 30),
                ..Default::default()
            }]
        });
        assert!(
            extra.contains(
                "field `extra_configs[0].batch_size`: samples 1073741824 is out of range"
            ),
            "{extra}"
        );
    }

    #[test]
    fn every_range_is_documented() {
        let docs = include_str!("../../../../docs/limits.md");
        for range in RANGES {
            assert!(
                docs.contains(&format!("`{}`", range.field)) && docs.contains(range.what),
                "docs/limits.md lacks {} ({})",
                range.field,
                range.what
            );
        }
    }
}
