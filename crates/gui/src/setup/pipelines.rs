//! The side panel's list editors: the pipelines (built-in or a custom chain of ops, each
//! op with its parameters, reordered with up and down) and the extra configs beyond the grid
//! (added from the current values, removed with ×).

use egui::{ComboBox, DragValue, RichText, Ui};

use loaderbench_engine::preset::{ConfigPoint, Preset, UnusedFields};
use loaderbench_engine::transform::{Op, PipelineSpec};

use super::fields::does_nothing;
use super::{remove_button, section};

/// The pipelines swept, each with its menu; where the plan uses none (a python dataset's
/// own code transforms its samples), why, unless the preset names one anyway.
pub(super) fn pipelines(ui: &mut Ui, preset: &mut Preset) {
    if let Some(why) = UnusedFields::of(preset).why("pipeline")
        && preset.pipeline == Preset::default().pipeline
    {
        ui.add(egui::Label::new(RichText::new(does_nothing(why)).weak()).wrap());
        return;
    }
    let mut remove = None;
    let many = preset.pipeline.len() > 1;
    for (index, spec) in preset.pipeline.iter_mut().enumerate() {
        ui.push_id(("pipeline", index), |ui| {
            ui.horizontal(|ui| {
                let label = ui.label(if many { "sweep" } else { "pipeline" });
                let name = match spec {
                    PipelineSpec::Light => "light",
                    PipelineSpec::Heavy => "heavy",
                    PipelineSpec::Custom { .. } => "custom",
                };
                ComboBox::from_id_salt("pipeline_kind")
                    .selected_text(name)
                    .show_ui(ui, |ui| {
                        if ui.selectable_label(name == "light", "light").clicked() {
                            *spec = PipelineSpec::Light;
                        }
                        if ui.selectable_label(name == "heavy", "heavy").clicked() {
                            *spec = PipelineSpec::Heavy;
                        }
                        if ui.selectable_label(name == "custom", "custom").clicked()
                            && name != "custom"
                        {
                            *spec = PipelineSpec::Custom {
                                name: "custom".to_owned(),
                                ops: spec.ops(),
                            };
                        }
                    })
                    .response
                    .labelled_by(label.id);
                if many
                    && ui
                        .small_button("×")
                        .on_hover_text("Remove this pipeline")
                        .clicked()
                {
                    remove = Some(index);
                }
            });
            if let PipelineSpec::Custom { name, ops } = spec {
                custom_ops(ui, name, ops);
            }
        });
    }
    if let Some(index) = remove {
        preset.pipeline.remove(index);
    }
    if ui
        .small_button("+ sweep another pipeline")
        .on_hover_text("Each pipeline is measured with every loader setting")
        .clicked()
    {
        let next = if preset.pipeline.contains(&PipelineSpec::Heavy) {
            PipelineSpec::Light
        } else {
            PipelineSpec::Heavy
        };
        preset.pipeline.push(next);
    }
}

fn custom_ops(ui: &mut Ui, name: &mut String, ops: &mut Vec<Op>) {
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            let label = ui.label("name");
            ui.add(egui::TextEdit::singleline(name).desired_width(120.0))
                .labelled_by(label.id);
        });
        let mut remove = None;
        // An op to swap with the one after it.
        let mut swap = None;
        let last = ops.len().saturating_sub(1);
        for (index, op) in ops.iter_mut().enumerate() {
            ui.push_id(("op", index), |ui| {
                ui.horizontal_wrapped(|ui| {
                    ui.label(RichText::new(format!("{}.", index + 1)).weak());
                    op_editor(ui, op);
                    let up = ui
                        .add_enabled(index > 0, egui::Button::new("up").small())
                        .on_hover_text("Run this op earlier");
                    if up.clicked() {
                        swap = Some(index - 1);
                    }
                    let down = ui
                        .add_enabled(index < last, egui::Button::new("down").small())
                        .on_hover_text("Run this op later");
                    if down.clicked() {
                        swap = Some(index);
                    }
                    if remove_button(ui, "op") {
                        remove = Some(index);
                    }
                });
            });
        }
        if let Some(index) = swap {
            ops.swap(index, index + 1);
        }
        if let Some(index) = remove {
            ops.remove(index);
        }
        ui.menu_button("+ add op", |ui| {
            for op in Op::templates() {
                if ui.button(op.label()).clicked() {
                    ops.push(op);
                }
            }
        });
    });
}

/// The op's name and a drag value per parameter.
fn op_editor(ui: &mut Ui, op: &mut Op) {
    ui.label(op.label());
    match op {
        Op::Rotate { degrees } => {
            ui.add(DragValue::new(degrees).range(0.0..=180.0).suffix("°"));
        }
        Op::Elastic { alpha, sigma } => {
            ui.add(DragValue::new(alpha).prefix("alpha ").speed(0.5));
            ui.add(DragValue::new(sigma).prefix("sigma ").speed(0.1));
        }
        Op::GaussianBlur { kernel, sigma } => {
            ui.add(DragValue::new(kernel).prefix("kernel ").range(1..=31));
            ui.add(DragValue::new(&mut sigma[0]).prefix("σ ").speed(0.05));
            ui.add(DragValue::new(&mut sigma[1]).prefix("to ").speed(0.05));
        }
        Op::Flip { p } => {
            ui.add(DragValue::new(p).prefix("p ").range(0.0..=1.0).speed(0.01));
        }
        Op::Crop { size, padding } => {
            ui.add(DragValue::new(&mut size[0]).prefix("h ").range(1..=4096));
            ui.add(DragValue::new(&mut size[1]).prefix("w ").range(1..=4096));
            ui.add(DragValue::new(padding).prefix("pad ").range(0..=256));
        }
        Op::Resize { size } => {
            ui.add(DragValue::new(&mut size[0]).prefix("h ").range(1..=4096));
            ui.add(DragValue::new(&mut size[1]).prefix("w ").range(1..=4096));
        }
        Op::Cost { micros_per_sample } => {
            ui.add(
                DragValue::new(micros_per_sample)
                    .suffix(" µs/sample")
                    .speed(5),
            );
        }
        Op::Normalize => {}
    }
}

/// The configs beyond the grid, each with a button that removes it, and a button that
/// adds one from the current values.
pub(super) fn extra_configs(ui: &mut Ui, preset: &mut Preset) {
    section(ui, "Extra configs");
    if ui
        .button("+ add extra config")
        .on_hover_text("One more config, from the first value of each setting above")
        .clicked()
    {
        preset.extra_configs.push(ConfigPoint::first_of(preset));
    }
    let mut remove = None;
    for (index, point) in preset.extra_configs.iter().enumerate() {
        ui.horizontal(|ui| {
            let mut parts = Vec::new();
            if let Some(n) = point.num_workers {
                parts.push(format!("nw={n}"));
            }
            if point.persistent_workers == Some(true) {
                parts.push("persistent".to_owned());
            }
            if point.pin_memory == Some(true) {
                parts.push("pin".to_owned());
            }
            if let Some(b) = point.batch_size {
                parts.push(format!("bs={b}"));
            }
            if let Some(p) = &point.pipeline {
                parts.push(p.name().to_owned());
            }
            ui.label(RichText::new(parts.join(" ")).monospace());
            if remove_button(ui, "extra config") {
                remove = Some(index);
            }
        });
    }
    if let Some(index) = remove {
        preset.extra_configs.remove(index);
    }
    if preset.extra_configs.is_empty() {
        return;
    }
    ui.label(
        RichText::new("Measured after the grid; unset knobs take each list's first value.")
            .weak()
            .small(),
    );
}
