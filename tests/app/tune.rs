//! The Tune button through egui_kittest: the budget field, the tune running in its child
//! process as the CLI's `tune` does, configs appearing as they are predicted and
//! measured, those out of the search listed with their reason, the budget bar, and its
//! results and each config's fate shown when it ends; Cancel keeps what it measured.

use std::path::Path;
use std::time::Duration;

use egui::Key;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use loaderbench_engine::preset::Preset;
use loaderbench_engine::transform::{Op, PipelineSpec};
use loaderbench_gui::App;
use loaderbench_measure::tune_trail::TuneStop;

use crate::common;
use common::gui::{app_on_preset, click, step_until, step_until_ended, type_into_role};

/// The app on a four-config preset (num_workers 0, 1, 2 and 4 on `samples` samples of a
/// pipeline costing 400 µs a sample, so that the configs with fewer than two workers
/// take about twice as long, however busy the machine), with journals in `dir`.
fn harness(dir: &Path, samples: usize) -> Harness<'static, App> {
    let preset = Preset {
        name: "tune-me".to_owned(),
        samples: Some(samples),
        epochs: 2,
        batch_size: vec![64],
        num_workers: vec![0, 1, 2, 4],
        pipeline: vec![PipelineSpec::Custom {
            name: "costly".to_owned(),
            ops: vec![Op::Cost {
                micros_per_sample: 400,
            }],
        }],
        ..Preset::default()
    };
    let path = dir.join("tune-me.ron");
    preset.save(&path).unwrap();
    let mut harness = app_on_preset(dir, &path, [1280.0, 800.0]);
    harness.run_steps(2);
    harness
}

fn tune_with_budget(harness: &mut Harness<'_, App>, seconds: &str) {
    type_into_role(harness, Role::SpinButton, "budget s", seconds);
    click(harness, "Tune");
}

#[test]
fn the_tune_button_tunes_within_the_budget_and_greys_out_what_drops_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(dir.path(), 1024);
    // Each round measures in a fresh process: 30 s leave room for the rounds after the
    // anchors' even on a loaded machine.
    tune_with_budget(&mut harness, "30");
    assert!(
        harness.state().is_running(),
        "{:?}",
        harness.state().messages()
    );
    assert!(
        harness
            .query_by_label_contains("of the 30 s budget")
            .is_some(),
        "the budget bar"
    );
    assert!(
        harness
            .query_by_label_contains("Seconds for the 50 planned epochs")
            .is_some(),
        "what the rows' figures are"
    );
    step_until_ended(&mut harness, Duration::from_secs(120));
    let progress = harness
        .state()
        .tune_progress()
        .expect("the tune's progress");
    assert!(progress.measured() >= 3, "{} measured", progress.measured());
    assert!(
        !progress.out_of_the_rounds().is_empty(),
        "with four configs, the slower half leaves after the first round"
    );
    // Once it has ended, each row says what the trail says became of its config.
    assert!(
        harness
            .query_all_by_label_contains("out after round ")
            .next()
            .is_some(),
        "a row says when and why it left"
    );
    assert!(
        harness.query_all_by_label("in the search").next().is_none(),
        "no config is still in a search that has ended"
    );
    assert!(
        harness
            .query_all_by_label_contains("best set")
            .next()
            .is_some()
    );
    let result = harness
        .state()
        .result()
        .expect("the tune's results are shown");
    let trail = result.tune.as_ref().expect("with its trail");
    assert!(trail.used_s <= 33.0, "used {:.1} s of 30", trail.used_s);
}

#[test]
fn cancelling_a_tune_keeps_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    // On 1,024 samples the tune settled in two rounds of about 2 s: a busy machine's
    // Escape came after it had. On 8,192 a round takes about 15 s, and two epochs show
    // nothing of the noise, so the first round cannot settle it.
    let mut harness = harness(dir.path(), 8192);
    tune_with_budget(&mut harness, "300");
    step_until(&mut harness, Duration::from_secs(120), |app| {
        app.tune_progress().is_some_and(|p| p.measured() >= 1)
    });
    harness.key_press(Key::Escape);
    step_until_ended(&mut harness, Duration::from_secs(30));
    let result = harness
        .state()
        .result()
        .expect("what was measured is shown");
    assert!(!result.results.is_empty());
    assert_eq!(
        result.tune.as_ref().map(|t| t.stop),
        Some(TuneStop::Cancelled)
    );
    assert!(
        harness
            .state()
            .messages()
            .iter()
            .any(|m| m.text.contains("The tune was stopped")),
        "{:?}",
        harness.state().messages()
    );
}
