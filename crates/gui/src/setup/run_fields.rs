//! The preset's fields beyond the sweep knobs: its name and description, the order of
//! samples (shuffle, seed, drop_last), normalize's mean and standard deviation, the
//! worker timeout and the planned epochs; and the dataset's labels
//! file, image-folder and tar-shard channels and size, and the shards' shuffle buffer. Fields typed as text keep their text in
//! [`RunText`] and mark a text that does not parse, as the other fields do.

use std::path::PathBuf;

use egui::{DragValue, RichText, Ui};

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::preset::{FieldPath, Preset, UnusedFields};

use super::fields::does_nothing;
use super::{Errors, Problem, choice_field, mark, missing, text_field};

/// The text of the fields typed as text.
#[derive(Debug, Clone, Default)]
pub struct RunText {
    seed: String,
    mean: String,
    std: String,
    timeout: String,
    labels: String,
    image_size: String,
}

impl RunText {
    pub fn from_preset(preset: &Preset) -> RunText {
        RunText {
            seed: preset.seed.to_string(),
            mean: numbers_text(&preset.normalize.mean),
            std: numbers_text(&preset.normalize.std),
            timeout: preset.worker_timeout_s.to_string(),
            labels: preset
                .dataset
                .labels
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            image_size: numbers_text(&preset.dataset.image_size.map(|n| n as f64)),
        }
    }
}

/// Name and description, at the top of the panel.
pub fn identity(ui: &mut Ui, edited: &mut Preset, errors: &mut Errors, problem: Problem<'_>) {
    let label = ui.label("name");
    ui.vertical(|ui| {
        ui.add(egui::TextEdit::singleline(&mut edited.name).desired_width(180.0))
            .labelled_by(label.id);
        if edited.name.trim().is_empty() {
            errors.insert(FieldPath::NAME, "give the preset a name".to_owned());
        } else {
            errors.remove(&FieldPath::NAME);
        }
        mark(ui, problem(errors, &FieldPath::NAME));
    });
    ui.end_row();
    let label = ui.label("description");
    ui.add(
        egui::TextEdit::multiline(&mut edited.description)
            .desired_rows(2)
            .desired_width(180.0),
    )
    .labelled_by(label.id);
    ui.end_row();
}

/// The labels file of IDX and npy datasets, the channels and size of image folders and
/// tar shards, and the shards' shuffle buffer.
pub fn dataset_extras(
    ui: &mut Ui,
    text: &mut RunText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    let dataset = &mut edited.dataset;
    if matches!(dataset.kind, DatasetKind::Idx | DatasetKind::Npy) {
        let label = ui.label("labels file");
        ui.vertical(|ui| {
            let field = text_field(ui, &label, &mut text.labels, "beside the images", 180.0);
            if field.changed() {
                let path = text.labels.trim();
                dataset.labels = (!path.is_empty()).then(|| PathBuf::from(path));
            }
            let labels = missing(dataset.labels.as_deref());
            mark(
                ui,
                labels.or_else(|| problem(errors, &FieldPath::DATASET_LABELS)),
            );
        });
        ui.end_row();
    }
    if dataset.kind == DatasetKind::Shards {
        let label = ui.label("shuffle buffer");
        ui.add(DragValue::new(&mut dataset.shuffle_buffer).range(0..=1_000_000))
            .on_hover_text("samples each worker's shuffle buffer holds (0: member order)")
            .labelled_by(label.id);
        ui.end_row();
    }
    if matches!(dataset.kind, DatasetKind::ImageFolder | DatasetKind::Shards) {
        let channels = ("channels", "channels");
        choice_field(ui, channels, &mut dataset.channels, [1, 3], channels_name);
        ui.end_row();
        if let Some(size) = parsed(
            ui,
            Field {
                title: "image size",
                key: FieldPath::DATASET_IMAGE_SIZE,
                hint: "height,width",
            },
            &mut text.image_size,
            errors,
            problem,
            |t| match parse_numbers(t)?.as_slice() {
                [h, w] if *h >= 1.0 && *w >= 1.0 && h.fract() == 0.0 && w.fract() == 0.0 => {
                    Ok([*h as usize, *w as usize])
                }
                _ => Err("give height,width in whole pixels, e.g. 28,28".to_owned()),
            },
        ) {
            dataset.image_size = size;
        }
    }
}

/// Shuffle, seed, drop_last, normalize, worker timeout, planned epochs.
pub fn run_fields(
    ui: &mut Ui,
    text: &mut RunText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    let label = ui.label("shuffle");
    ui.checkbox(&mut edited.shuffle, "a new order each epoch")
        .labelled_by(label.id);
    ui.end_row();
    if let Some(seed) = parsed(
        ui,
        Field {
            title: "seed",
            key: FieldPath::SEED,
            hint: "0",
        },
        &mut text.seed,
        errors,
        problem,
        |t| {
            t.parse::<u64>()
                .map_err(|_| format!("`{t}` is not a whole number"))
        },
    ) {
        edited.seed = seed;
    }
    let label = ui.label("drop last");
    ui.checkbox(&mut edited.drop_last, "drop a last, smaller batch")
        .labelled_by(label.id);
    ui.end_row();
    normalize_fields(ui, text, edited, errors, problem);
    worker_timeout_field(ui, text, edited, errors, problem);
    let label = ui.label("planned epochs");
    ui.vertical(|ui| {
        ui.add(DragValue::new(&mut edited.planned_epochs).range(1..=100_000))
            .labelled_by(label.id)
            .on_hover_text("The epochs a training run takes: the break-even and the recommendation plan for them");
        mark(ui, problem(errors, &FieldPath::PLANNED_EPOCHS));
    });
    ui.end_row();
}

/// The mean and standard deviation the samples are normalized with, one per channel.
fn normalize_fields(
    ui: &mut Ui,
    text: &mut RunText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    if let Some(why) = UnusedFields::of(edited).why("normalize") {
        let label = ui.label("normalize");
        ui.add(egui::Label::new(RichText::new(does_nothing(why)).weak()).wrap())
            .labelled_by(label.id);
        ui.end_row();
        return;
    }
    let per_channel = |t: &str| {
        let values = parse_numbers(t)?;
        if values.is_empty() {
            Err("give one value per channel, e.g. 0.5 or 0.5,0.5,0.5".to_owned())
        } else {
            Ok(values)
        }
    };
    if let Some(mean) = parsed(
        ui,
        Field {
            title: "normalize mean",
            key: FieldPath::NORMALIZE_MEAN,
            hint: "0.286",
        },
        &mut text.mean,
        errors,
        problem,
        per_channel,
    ) {
        edited.normalize.mean = mean;
    }
    if let Some(std) = parsed(
        ui,
        Field {
            title: "normalize std",
            key: FieldPath::NORMALIZE_STD,
            hint: "0.353",
        },
        &mut text.std,
        errors,
        problem,
        |t| {
            let values = per_channel(t)?;
            match values.iter().find(|v| **v <= 0.0) {
                Some(v) => Err(format!("{v}: a standard deviation must be above zero")),
                None => Ok(values),
            }
        },
    ) {
        edited.normalize.std = std;
    }
}

/// How long a worker may take over a batch before the run fails.
fn worker_timeout_field(
    ui: &mut Ui,
    text: &mut RunText,
    edited: &mut Preset,
    errors: &mut Errors,
    problem: Problem<'_>,
) {
    if let Some(seconds) = parsed(
        ui,
        Field {
            title: "worker timeout (s)",
            key: FieldPath::WORKER_TIMEOUT_S,
            hint: "60",
        },
        &mut text.timeout,
        errors,
        problem,
        |t| match t.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
            _ => Err(format!("`{t}` is not a number of seconds above zero")),
        },
    ) {
        edited.worker_timeout_s = seconds;
    }
}

/// A text field: its label, the preset field it sets (which names its problems) and the
/// hint shown while it is empty.
pub(super) struct Field<'a> {
    pub title: &'a str,
    pub key: FieldPath,
    pub hint: &'a str,
}

/// A text field whose text `parse` reads; `Some(value)` when it was edited to a valid
/// value, and its problem marked beside it (the text's, else the plan's).
pub(super) fn parsed<T>(
    ui: &mut Ui,
    field: Field<'_>,
    text: &mut String,
    errors: &mut Errors,
    problem: Problem<'_>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Option<T> {
    let Field { title, key, hint } = field;
    let label = ui.label(title);
    let value = ui
        .vertical(|ui| {
            let edit = text_field(ui, &label, text, hint, 120.0);
            let value = if edit.changed() {
                match parse(text.trim()) {
                    Ok(value) => {
                        errors.remove(&key);
                        Some(value)
                    }
                    Err(why) => {
                        errors.insert(key.clone(), why);
                        None
                    }
                }
            } else {
                None
            };
            mark(ui, problem(errors, &key));
            value
        })
        .inner;
    ui.end_row();
    value
}

fn channels_name(channels: usize) -> &'static str {
    if channels == 3 { "3 (RGB)" } else { "1 (grey)" }
}

/// `0.5,0.25` from numbers.
fn numbers_text(values: &[f64]) -> String {
    values
        .iter()
        .map(f64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `0.5, 0.25` into numbers (none for an empty text).
fn parse_numbers(text: &str) -> Result<Vec<f64>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("`{part}` is not a number"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_lists_round_trip() {
        assert_eq!(parse_numbers("0.5, 0.25"), Ok(vec![0.5, 0.25]));
        assert!(parse_numbers("0.5,x").unwrap_err().contains("`x`"));
        assert_eq!(numbers_text(&[0.5, 0.25]), "0.5,0.25");
    }
}
