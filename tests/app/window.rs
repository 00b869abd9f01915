//! The desktop app through egui_kittest: settings changed by label, a tiny synthetic run
//! streamed into the plots and the table, a ranked run's spread between ranks on both
//! runtimes, cancelling, preset files (a broken one, and a save/load round trip) and the
//! PNG export rendered offscreen.

use std::path::{Path, PathBuf};
use std::time::Duration;

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use loaderbench_engine::preset::Preset;
use loaderbench_gui::{App, Launch, Phase};
use loaderbench_measure::stats;
use loaderbench_present::export::{Csv, Exporter};

/// The window's size in these tests.
const SIZE: [f32; 2] = [1280.0, 800.0];

fn harness(launch: Launch) -> Harness<'static, App> {
    common::gui::builder()
        .with_size(SIZE)
        .build_eframe(move |cc| App::new(cc, launch))
}

/// [`tiny_preset`] at num_workers 0 with `sets` applied, saved in `dir`.
fn tiny_file(dir: &Path, samples: usize, epochs: usize, sets: &[(&str, &str)]) -> PathBuf {
    let mut preset = Preset {
        num_workers: vec![0],
        ..tiny_preset(samples, epochs)
    };
    for (key, value) in sets {
        preset.set(key, value).unwrap();
    }
    let path = dir.join("tiny.ron");
    preset.save(&path).unwrap();
    path
}

/// A launch that keeps journals in `dir`.
fn launch(dir: &Path, preset: Option<String>) -> Launch {
    Launch {
        preset,
        run_now: false,
        journal_dir: Some(dir.to_path_buf()),
        measurer: Some(env!("CARGO_BIN_EXE_loaderbench").into()),
        ..Launch::default()
    }
}

use crate::common;
use common::gui::{
    app_on_preset, app_running, choose, click, start_the_run, step_until, step_until_ended,
    type_into, type_into_role,
};
use common::runs::{tiny_preset, tiny_preset_file};

#[test]
fn opens_with_seed_light_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let harness = harness(launch(dir.path(), None));
    assert_eq!(harness.state().preset().name, "seed-light");
    assert!(!harness.state().title().contains('*'));
}

#[test]
fn num_workers_typed_by_label_change_the_preset_and_mark_the_title() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(launch(dir.path(), None));
    type_into(&mut harness, "num_workers", "0, 2");
    assert_eq!(harness.state().preset().num_workers, vec![0, 2]);
    assert!(harness.state().title().ends_with('*'));
}

#[test]
fn a_batch_size_of_zero_is_marked_with_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(launch(dir.path(), None));
    type_into(&mut harness, "batch size", "0");
    assert_eq!(harness.state().preset().batch_size, vec![0]);
    harness
        .get_by_label_contains("field `batch_size`: must be at least 1")
        .hover();
}

#[test]
fn num_workers_that_are_not_numbers_are_marked_and_the_last_good_value_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(launch(dir.path(), None));
    type_into(&mut harness, "num_workers", "0, 2");
    type_into(&mut harness, "num_workers", "two");
    assert!(
        harness
            .query_by_label_contains("`two` is not a whole number")
            .is_some()
    );
    assert_eq!(harness.state().preset().num_workers, vec![0, 2]);
}

#[test]
fn a_tiny_run_fills_the_plots_and_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_preset_file(dir.path(), 512, 2);
    let mut harness = app_running(dir.path(), &preset, SIZE);
    // A run this small may already be over after one frame; it must have started.
    assert!(harness.state().phase().is_some(), "Ctrl+R started no run");
    step_until_ended(&mut harness, Duration::from_secs(120));

    let app = harness.state();
    assert_eq!(app.phase(), Some(&Phase::Finished), "{:?}", app.messages());
    let charts = app.charts();
    // A busy machine (other tests run beside this one) adds " * disturbed".
    let names: Vec<&str> = charts[0]
        .series
        .iter()
        .map(|s| s.name.trim_end_matches(" * disturbed"))
        .collect();
    assert_eq!(names, ["nw=0", "nw=2"]);
    for chart in &charts[..2] {
        assert!(
            chart.series.iter().all(|s| s.points.len() == 2),
            "{chart:?}"
        );
    }
    assert_eq!(charts[2].series.len(), 2);
    assert!(charts[2].series.iter().all(|s| s.points.len() == 8));
    assert_eq!(app.result().unwrap().summary().len(), 2);
    assert!(harness.query_by_label("first batch").is_some());
    assert!(harness.query_all_by_label("epoch 2").next().is_some());
    assert!(harness.query_by_label_contains("Finished in").is_some());
}

/// In a window narrower than the progress line, which then ends in `…` rather than
/// widening the results view past the window (the plots, the table and the analysis
/// were cut at its edge while a run went on).
#[test]
fn cancelling_returns_to_idle() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_preset_file(dir.path(), 60_000, 20);
    let narrow = [900.0, 800.0];
    let mut harness = app_running(dir.path(), &preset, narrow);
    assert!(harness.state().is_running());
    // Into the measuring child's first epoch: the progress line says how long is left
    // once a batch is done (20 epochs of 60,000 samples take far longer than the wait).
    common::wait_until(Duration::from_secs(60), "the first batch", || {
        harness.step();
        harness.query_by_label_contains(" · about ").is_some()
    });
    let progress = harness.get_by_label_contains(" · about ").rect();
    assert!(progress.right() <= narrow[0], "{progress:?}");
    assert!(harness.state().is_running());
    harness.key_press(Key::Escape);
    step_until_ended(&mut harness, Duration::from_secs(30));
    assert_eq!(harness.state().phase(), Some(&Phase::Cancelled));
    // The Run button is back (its label holds its shortcut too: `Run Ctrl+R`); where the
    // first epoch had not ended, the note that nothing was measured says "Press Run" too.
    let run_button = harness.query_by(|node| {
        node.role() == Role::Button && node.label().is_some_and(|l| l.starts_with("Run"))
    });
    assert!(run_button.is_some_and(|b| !b.accesskit_node().is_disabled()));
}

/// The app after a run refused once it opened the dataset, before any epoch: three
/// normalize means on the one-channel synthetic images. Returns the run's error.
fn refused_run(dir: &Path) -> (Harness<'static, App>, String) {
    let mut preset = tiny_preset(256, 1);
    preset.normalize.mean = vec![0.5; 3];
    preset.normalize.std = vec![0.25; 3];
    let file = dir.join("rgb.ron");
    preset.save(&file).unwrap();
    let mut harness = app_running(dir, &file, loaderbench_gui::WINDOW_SIZE);
    step_until_ended(&mut harness, Duration::from_secs(60));
    let error = match harness.state().phase() {
        Some(Phase::Failed(error)) if error.contains("normalize.mean") => error.clone(),
        phase => panic!("{phase:?} {:?}", harness.state().messages()),
    };
    (harness, error)
}

#[test]
fn a_run_that_fails_before_its_first_epoch_says_so_instead_of_empty_plots() {
    // The app drew empty axes and offered to export them.
    let dir = tempfile::tempdir().unwrap();
    let (harness, _) = refused_run(dir.path());
    assert!(
        harness
            .query_by_label("Nothing was measured: the run failed before its first epoch.")
            .is_some()
    );
    for drawn in ["First-batch latency", "PNG: plots", "Results"] {
        assert!(harness.query_by_label(drawn).is_none(), "{drawn} is drawn");
    }
}

#[test]
fn a_run_refused_on_a_field_marks_that_field_until_the_preset_changes() {
    // The check needs the dataset open, so only the run finds it; the app said it only
    // in the message line at the bottom ("The run failed: …").
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, error) = refused_run(dir.path());
    let mark = harness.get_by_label(&error).rect();
    let mean = harness.get_by_label("normalize mean").rect();
    let std = harness.get_by_label("normalize std").rect();
    assert!(
        mean.top() < mark.top() && mark.top() < std.top(),
        "the mark at {mark:?}, normalize mean at {mean:?}, std at {std:?}"
    );
    type_into(&mut harness, "num_workers", "1");
    assert!(
        harness.query_by_label(&error).is_none(),
        "{error} still marked"
    );
}

#[test]
fn a_broken_preset_file_is_reported_with_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.ron");
    std::fs::write(&broken, "(version: 1, name: \"x\", num_wrokers: [1])").unwrap();
    let mut harness = harness(launch(dir.path(), None));
    type_into(&mut harness, "preset file", &broken.display().to_string());
    harness.get_by_label("Open").click();
    harness.run_steps(3);
    let messages = harness.state().messages();
    let message = &messages.last().unwrap().text;
    assert!(
        message.contains("broken.ron") && message.contains("num_wrokers"),
        "{message}"
    );
    assert!(harness.query_by_label_contains("num_wrokers").is_some());
    assert_eq!(harness.state().preset().name, "seed-light");
}

/// The app with num_workers set to 0 and 4 and saved (Save) as `mine.ron` in `dir`;
/// returns the preset as saved and the file's path.
fn saved_preset(dir: &Path) -> (Harness<'static, App>, Preset, PathBuf) {
    let path = dir.join("mine.ron");
    let mut harness = harness(launch(dir, None));
    type_into(&mut harness, "num_workers", "0,4");
    type_into(&mut harness, "preset file", &path.display().to_string());
    harness.get_by_label("Save").click();
    harness.run_steps(3);
    let saved = harness.state().preset().clone();
    (harness, saved, path)
}

#[test]
fn saving_writes_the_config_and_clears_the_mark() {
    let dir = tempfile::tempdir().unwrap();
    let (harness, saved, path) = saved_preset(dir.path());
    assert!(!harness.state().title().contains('*'));
    assert_eq!(Preset::load(&path).unwrap(), saved);
}

#[test]
fn opening_the_saved_file_gives_the_same_config() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, saved, path) = saved_preset(dir.path());
    type_into(&mut harness, "num_workers", "8");
    assert!(harness.state().title().ends_with('*'));
    harness.get_by_label("Open").click();
    harness.run_steps(3);
    assert_eq!(harness.state().preset(), &saved);
    assert_eq!(harness.state().preset_path(), Some(path.as_path()));
}

/// A preset opened from its folder holds its relative paths resolved; Save writes them
/// back relative to the file, Save as in another folder writes them absolute, and each
/// file opens as the same config.
#[test]
fn a_preset_s_paths_beside_its_file_open_resolved_and_save_back_relative() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    let path = bench.join("bench.ron");
    std::fs::write(
        &path,
        "(version: 1, name: \"beside\", dataset: (kind: npy, path: \"data/x.npy\"))",
    )
    .unwrap();
    let mut harness = harness(launch(dir.path(), Some(path.display().to_string())));
    let opened = harness.state().preset().clone();
    assert_eq!(opened.dataset.path, Some(bench.join("data/x.npy")));
    harness.get_by_label("Save").click();
    harness.run_steps(3);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("path: \"data/x.npy\""), "{text}");
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let moved = other.join("moved.ron");
    type_into(&mut harness, "preset file", &moved.display().to_string());
    harness.get_by_label("Save").click();
    harness.run_steps(3);
    let text = std::fs::read_to_string(&moved).unwrap();
    let absolute = format!("path: {:?}", bench.join("data/x.npy").display().to_string());
    assert!(text.contains(&absolute), "{text}");
    for file in [&path, &moved] {
        type_into(&mut harness, "preset file", &file.display().to_string());
        harness.get_by_label("Open").click();
        harness.run_steps(3);
        assert_eq!(harness.state().preset(), &opened, "{}", file.display());
    }
}

#[test]
fn exports_the_plots_as_a_png_at_the_pixel_density() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_preset_file(dir.path(), 512, 2);
    let mut harness = app_on_preset(dir.path(), &preset, SIZE);
    harness.set_pixels_per_point(1.5);
    start_the_run(&mut harness);
    assert!(harness.state().is_running());
    step_until_ended(&mut harness, Duration::from_secs(120));
    harness.run_ok();
    let base = dir.path().join("out.md");
    harness.state_mut().set_export_path(base.clone());

    // The export shows the plots as they are when it is asked for; messages that arrive
    // afterwards may move them.
    let rect = harness.state().plots_rect().unwrap();
    harness.key_press_modifiers(Modifiers::COMMAND, Key::E);
    let png = dir.path().join("out-plots.png");
    step_until(&mut harness, Duration::from_secs(60), |_| png.exists());
    let image = common::whole_png(&png);
    let expected = (rect.width() * 1.5, rect.height() * 1.5);
    assert!(
        (image.width() as f32 - expected.0).abs() <= 2.0,
        "{:?} vs {expected:?}",
        image.dimensions()
    );
    assert!(
        (image.height() as f32 - expected.1).abs() <= 2.0,
        "{:?} vs {expected:?}",
        image.dimensions()
    );
    let mut colors: Vec<[u8; 4]> = image.pixels().map(|p| p.0).collect();
    colors.sort_unstable();
    colors.dedup();
    assert!(
        colors.len() > 20,
        "the image looks blank: {} colours",
        colors.len()
    );
}

#[test]
fn exports_the_table_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest run that has a table.
    let preset = tiny_preset_file(dir.path(), 64, 1);
    let mut harness = app_running(dir.path(), &preset, SIZE);
    step_until_ended(&mut harness, Duration::from_secs(120));
    harness.run_ok();
    harness
        .state_mut()
        .set_export_path(dir.path().join("out.md"));
    harness.get_by_label("CSV").click_accesskit();
    // The file holds the run's table as the CLI's `--csv` writes it: a header, then a
    // row per config (num_workers 0 and 2).
    let run = harness.state().result().expect("the finished run").clone();
    let expected = String::from_utf8(Csv.export(&run).unwrap()).unwrap();
    let lines: Vec<&str> = expected.lines().collect();
    assert_eq!(lines.len(), 3, "{expected}");
    assert!(lines[0].contains("num_workers"), "{expected}");
    let csv = dir.path().join("out.csv");
    let written = || std::fs::read_to_string(&csv).unwrap_or_default();
    step_until(&mut harness, Duration::from_secs(30), |_| {
        written() == expected
    });
}

#[test]
fn a_run_on_both_runtimes_shows_the_compare_view() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_file(dir.path(), 256, 1, &[("runtime", "loaderbench,pytorch")]);
    let mut harness = app_running(dir.path(), &preset, SIZE);
    step_until_ended(&mut harness, Duration::from_secs(180));
    assert_eq!(
        harness.state().phase(),
        Some(&Phase::Finished),
        "{:?}",
        harness.state().messages()
    );
    harness.get_by_label_contains("PyTorch's DataLoader against loaderbench");
    harness.get_by_label("nw=0 (light)");
}

/// Whether the menu of the knob labelled `label` is greyed out.
fn menu_disabled(harness: &Harness<'_, App>, label: &str) -> bool {
    harness
        .get_by_role_and_label(Role::ComboBox, label)
        .accesskit_node()
        .is_disabled()
}

/// The fields a plan leaves unused are greyed out, or say why in place of the field, and
/// come back once a config would use them: the start method without the pytorch
/// runtime, the transfers without our engine's worker processes, the cache of a dataset
/// without files of its own, and a python dataset's pipeline, normalize and where the
/// transforms run.
#[test]
fn the_fields_a_plan_leaves_unused_are_greyed_out_until_a_config_uses_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = harness(launch(dir.path(), None));
    assert_eq!(
        app.state().preset().runtime,
        vec![loaderbench_engine::preset::Runtime::Loaderbench]
    );
    for unused in [
        "start method",
        "dataset transfer",
        "batch transfer",
        "cache",
    ] {
        assert!(menu_disabled(&app, unused), "{unused}");
    }
    assert!(!menu_disabled(&app, "transform at"));
    choose(&mut app, "worker kind", "fork");
    app.run_steps(2);
    assert!(!menu_disabled(&app, "dataset transfer"));
    assert!(!menu_disabled(&app, "batch transfer"));

    let mut python = Preset {
        runtime: vec![loaderbench_engine::preset::Runtime::Pytorch],
        ..Preset::default()
    };
    python.set("dataset.kind", "python").unwrap();
    python.set("dataset.path", "my_data.py").unwrap();
    python.set("dataset.factory", "make_dataset").unwrap();
    let path = dir.path().join("python.ron");
    python.save(&path).unwrap();
    let python_app = harness(launch(dir.path(), Some(path.display().to_string())));
    let why = "Does nothing here: a python dataset transforms its samples in its own code";
    assert_eq!(
        python_app.get_all_by_label(why).count(),
        2,
        "pipeline and normalize"
    );
    assert!(
        python_app
            .query_by_role_and_label(Role::ComboBox, "pipeline")
            .is_none()
    );
    assert!(python_app.query_by_label("normalize mean").is_none());
    assert!(menu_disabled(&python_app, "transform at"));
    assert!(menu_disabled(&python_app, "cache"));
    assert!(!menu_disabled(&python_app, "start method"));
}

#[test]
fn the_start_method_is_picked_once_pytorch_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(launch(dir.path(), None));
    choose(&mut harness, "runtime", "loaderbench, pytorch (sweep)");
    assert_eq!(harness.state().preset().runtime.len(), 2);
    let start_method = harness.get_by_role_and_label(Role::ComboBox, "start method");
    assert!(!start_method.accesskit_node().is_disabled());
    start_method.click();
    harness.run_steps(2);
    click(&mut harness, "spawn");
    assert_eq!(
        harness.state().preset().start_method,
        vec![loaderbench_engine::preset::StartMethod::Spawn]
    );
}

#[test]
fn a_ranked_run_plots_each_ranked_config_s_fastest_and_slowest_rank() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [("ranks", "1,2"), ("runtime", "loaderbench,pytorch")];
    let mut harness = app_running(dir.path(), &tiny_file(dir.path(), 512, 2, &sets), SIZE);
    step_until_ended(&mut harness, Duration::from_secs(240));
    let app = harness.state();
    assert_eq!(app.phase(), Some(&Phase::Finished), "{:?}", app.messages());
    let charts = app.charts();
    let ids: Vec<&str> = charts.iter().map(|c| c.id.name()).collect();
    assert_eq!(
        ids,
        ["first-batch", "epoch-times", "rank-spread", "timeline"]
    );
    let spread = &charts[2];
    assert_eq!(spread.x.names, ["nw=0 ranks=2", "nw=0 pytorch ranks=2"]);
    let result = app.result().unwrap();
    for (group, name) in spread.x.names.iter().enumerate() {
        let measured = result.results.iter().find(|r| &r.label == name).unwrap();
        let median = |pick: fn(f64, f64) -> f64, start: f64| {
            let values: Vec<f64> = measured
                .epochs
                .iter()
                .map(|e| e.ranks.iter().map(|r| r.seconds).fold(start, pick))
                .collect();
            assert_eq!(values.len(), 2, "{name}: two epochs of one repeat");
            stats::median(&values).unwrap()
        };
        let fastest = median(f64::min, f64::INFINITY);
        let slowest = median(f64::max, f64::NEG_INFINITY);
        assert!(fastest <= slowest);
        assert_eq!(spread.series[0].points[group][1], fastest, "{name}");
        assert_eq!(spread.series[1].points[group][1], slowest, "{name}");
    }
    assert!(harness.query_by_label_contains("Rank spread").is_some());
}

/// The app with a Python dataset picked as the kind and the test module typed as its
/// path.
fn python_dataset(dir: &Path) -> Harness<'static, App> {
    let mut harness = harness(launch(dir, None));
    choose(&mut harness, "kind", "python");
    type_into(&mut harness, "path", test_module().to_str().unwrap());
    harness
}

fn test_module() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/user_dataset/mnist_user.py")
}

/// [`python_dataset`] with its factory, args and collate typed in.
fn python_dataset_filled(dir: &Path) -> Harness<'static, App> {
    let mut harness = python_dataset(dir);
    type_into(&mut harness, "factory", "make_dataset");
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "args",
        "root = /data/mnist\naugment = true",
    );
    type_into(&mut harness, "collate", "make_collate");
    harness
}

/// A Python dataset picked as the kind, with no factory yet: the plan names the field,
/// and the panel marks it.
#[test]
fn a_python_dataset_picked_without_a_factory_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let harness = python_dataset(dir.path());
    assert_eq!(
        harness.state().preset().dataset.kind,
        loaderbench_engine::dataset::DatasetKind::Python
    );
    harness
        .get_by_label_contains("field `dataset.factory`")
        .hover();
}

/// A Python dataset's fields typed in by label go into the preset; on seed-light's
/// engine, which cannot load user code, the plan then says which runtime to use.
#[test]
fn a_python_dataset_s_fields_are_edited_by_label_and_the_runtime_to_use_named() {
    let dir = tempfile::tempdir().unwrap();
    let harness = python_dataset_filled(dir.path());
    let dataset = harness.state().preset().dataset.clone();
    assert_eq!(dataset.path.as_deref(), Some(test_module().as_path()));
    assert_eq!(dataset.factory.as_deref(), Some("make_dataset"));
    assert_eq!(dataset.args["root"], "/data/mnist");
    assert_eq!(dataset.args["augment"], true);
    assert_eq!(dataset.collate.as_deref(), Some("make_collate"));
    harness
        .get_by_label_contains("use runtime: [pytorch]")
        .hover();
}

#[test]
fn python_args_that_are_not_key_value_lines_are_marked_and_the_last_good_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = python_dataset_filled(dir.path());
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "args",
        "root /data/mnist",
    );
    assert!(
        harness
            .query_by_label_contains("line 1: expected `key = value`")
            .is_some()
    );
    assert_eq!(harness.state().preset().dataset.args["root"], "/data/mnist");
}

#[test]
fn a_python_factory_that_is_not_a_function_name_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = python_dataset_filled(dir.path());
    type_into(&mut harness, "factory", "make dataset");
    harness
        .get_by_label_contains("`make dataset` is not a Python function name")
        .hover();
}
