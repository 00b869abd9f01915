//! Saved runs opened in the app through egui_kittest: a results JSON written by
//! `loaderbench run` (from the command line's file list and from the typed path field),
//! the journal of a cancelled run, runs from two machines plotted together, Recent runs,
//! loading a run's preset, the one-line errors for a corrupt file and a file from a newer
//! loaderbench, and `report`/`run --png` drawing the app's PNG without a display.

use std::path::{Path, PathBuf};
use std::time::Duration;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use loaderbench_gui::{App, ChartId, Launch, Phase, PngArea};
use loaderbench_measure::results_file;

use crate::common;
use common::gui::{app_on_saved_runs, click, pick_baseline};
use common::runs::{from_another_machine, two_configs};
use common::{loaderbench_command, run_with_deadline, stderr};

/// The app in its default window showing the saved runs `results`, journals in `dir`.
fn app(dir: &Path, results: Vec<PathBuf>) -> Harness<'static, App> {
    app_on_saved_runs(dir, results, [1280.0, 800.0])
}

/// Types `path` into the path field and clicks Open, as a user opens a saved run.
fn open_from_path_field(harness: &mut Harness<'_, App>, path: &Path) {
    let field = "preset file";
    harness
        .get_by_role_and_label(Role::TextInput, field)
        .focus();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::TextInput, field)
        .type_text(path.to_str().expect("a UTF-8 path"));
    harness.run_steps(2);
    harness.get_by_label("Open").click();
    harness.run_steps(3);
}

/// The error lines in the message bar.
fn errors(app: &App) -> Vec<String> {
    app.messages()
        .iter()
        .filter(|m| m.error)
        .map(|m| m.text.clone())
        .collect()
}

/// Asserts the app shows a run of `configs` measured configs, plotted and tabled.
fn assert_shows(harness: &Harness<'_, App>, configs: usize) {
    let app = harness.state();
    let result = app.result().expect("a run is shown");
    assert_eq!(result.results.len(), configs);
    let charts = app.charts();
    let epochs = charts
        .iter()
        .find(|c| c.id == ChartId::EpochTimes)
        .expect("epoch chart");
    let plotted: Vec<&str> = epochs
        .series
        .iter()
        .filter(|s| !s.points.is_empty())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(plotted.len(), configs, "{plotted:?}");
    assert_eq!(result.summary().len(), configs);
    assert!(harness.query_by_label("first batch").is_some());
    for result in &result.results {
        assert!(
            harness
                .query_all_by_label_contains(&result.label)
                .next()
                .is_some()
        );
    }
    assert!(app.analysis().is_some());
}

/// The app on the saved run, from the command line's file list.
fn saved_run_app(dir: &Path) -> Harness<'static, App> {
    app(dir, vec![two_configs().json.clone()])
}

#[test]
fn a_results_file_on_the_command_line_opens_as_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let harness = saved_run_app(dir.path());
    assert_eq!(harness.state().phase(), Some(&Phase::Finished));
    assert!(
        errors(harness.state()).is_empty(),
        "{:?}",
        errors(harness.state())
    );
    assert_shows(&harness, 2);
    assert!(
        harness.query_by_label("Finished (a saved run)").is_some(),
        "a saved run shows no duration of its own"
    );
}

#[test]
fn a_cancelled_run_s_journal_typed_into_the_path_field_shows_its_configs() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = saved_run_app(dir.path());
    // A cancelled run's journal: the first config only.
    let written = std::fs::read_to_string(&two_configs().journal).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    let cancelled = dir.path().join("cancelled.jsonl");
    std::fs::write(
        &cancelled,
        format!(
            "{}\n{}\n{{\"entry\":\"end\",\"status\":{{\"status\":\"cancelled\"}}}}\n",
            lines[0], lines[1]
        ),
    )
    .unwrap();
    open_from_path_field(&mut harness, &cancelled);
    assert_eq!(harness.state().phase(), Some(&Phase::Cancelled));
    assert_shows(&harness, 1);
}

#[test]
fn a_corrupt_file_and_one_from_a_newer_loaderbench_are_one_error_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.json");
    let text = std::fs::read_to_string(&two_configs().json).unwrap();
    std::fs::write(&corrupt, &text[..text.len() / 3]).unwrap();
    let future = dir.path().join("future.json");
    std::fs::write(
        &future,
        text.replacen(
            &format!("\"version\": {}", results_file::VERSION),
            "\"version\": 99",
            1,
        ),
    )
    .unwrap();
    let harness = app(dir.path(), vec![corrupt.clone(), future.clone()]);
    let errors = errors(harness.state());
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("corrupt.json") && errors[0].contains("truncated"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("future.json") && errors[1].contains("newer loaderbench"),
        "{errors:?}"
    );
    assert!(errors.iter().all(|e| !e.contains('\n')), "{errors:?}");
    assert!(harness.state().result().is_none());
}

/// A bad file named before a good one is still said: opening the good one cleared the
/// errors shown, the bad one's with them, and the window said only "Opened".
#[test]
fn a_file_that_cannot_be_opened_is_said_beside_one_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let good = dir.path().join("good.json");
    std::fs::copy(&two_configs().json, &good).unwrap();
    let harness = app(dir.path(), vec![missing, good]);
    let errors = errors(harness.state());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("Could not open the results: ") && errors[0].contains("missing.json"),
        "{errors:?}"
    );
    assert!(harness.state().result().is_some(), "the good one is shown");
}

/// The app on the saved run as measured on a laptop and on a server, with the run's
/// journal among the recent runs (journals in `dir`).
fn two_machines(dir: &Path) -> Harness<'static, App> {
    let saved = two_configs();
    std::fs::copy(&saved.journal, dir.join("run.jsonl")).unwrap();
    let server = from_another_machine(&saved.json, &dir.join("server.json"));
    let laptop = dir.join("laptop.json");
    std::fs::copy(&saved.json, &laptop).unwrap();
    app(dir, vec![laptop, server])
}

#[test]
fn runs_from_two_machines_plot_together_one_colour_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let harness = two_machines(dir.path());
    let app = harness.state();
    assert!(errors(app).is_empty(), "{:?}", errors(app));
    let result = app.result().expect("the overlay is shown");
    assert_eq!(result.labels.len(), 4, "{:?}", result.labels);
    let epochs = app
        .charts()
        .into_iter()
        .find(|c| c.id == ChartId::EpochTimes)
        .expect("epoch chart");
    let series: Vec<(&str, usize)> = epochs
        .series
        .iter()
        // A busy test machine may mark a config disturbed.
        .map(|s| (s.name.trim_end_matches(" * disturbed"), s.color))
        .collect();
    assert_eq!(
        series,
        [
            ("laptop · nw=0", 0),
            ("laptop · nw=2", 0),
            ("server · nw=0", 1),
            ("server · nw=2", 1)
        ],
        "labelled by run and config, one colour per run"
    );
}

#[test]
fn runs_from_two_machines_share_a_table_with_a_run_column() {
    let dir = tempfile::tempdir().unwrap();
    let harness = two_machines(dir.path());
    assert!(
        harness.query_by_label("run").is_some(),
        "the table's run column"
    );
    // A table row per config (the analysis may name the run too).
    assert!(harness.query_all_by_label("laptop").count() >= 2);
    assert!(harness.query_all_by_label("server").count() >= 2);
}

#[test]
fn runs_from_two_machines_warn_that_the_machines_differ() {
    let dir = tempfile::tempdir().unwrap();
    let harness = two_machines(dir.path());
    let app = harness.state();
    assert!(
        app.messages()
            .iter()
            .any(|m| m.text.contains("machines differ") && m.text.contains("Made-up Xeon 9999")),
        "{:?}",
        app.messages()
    );
}

#[test]
fn an_open_run_is_a_baseline_to_compare_with() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = two_machines(dir.path());
    // The same figures, every config matched.
    pick_baseline(&mut harness, "server (open run)");
    let charts = harness.state().analysis_charts();
    let comparison = charts.last().expect("the comparison chart");
    assert_eq!(comparison.id, ChartId::Baseline);
    assert_eq!(comparison.series[0].points.len(), 2, "both configs matched");
}

/// Opens the saved run's journal from File → Recent runs.
fn open_recent_run(harness: &mut Harness<'_, App>) {
    click(harness, "File");
    click(harness, "Recent runs");
    harness.get_by_label_contains("seed-light · ").click();
    harness.run_steps(3);
}

#[test]
fn a_recent_run_opens_alone_from_the_file_menu() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = two_machines(dir.path());
    open_recent_run(&mut harness);
    assert_eq!(harness.state().result().map(|r| r.labels.len()), Some(2));
}

#[test]
fn a_run_s_preset_loads_into_the_setup_panel() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = two_machines(dir.path());
    open_recent_run(&mut harness);
    click(&mut harness, "File");
    click(&mut harness, "Load this run's preset");
    let preset = harness.state().preset();
    assert_eq!(
        (preset.samples, preset.batch_size.as_slice()),
        (Some(512), &[64][..])
    );
}

/// The header's line about the plan: configs, repeats and epochs.
fn plan_line(configs: usize, repeats: usize, epochs: usize) -> String {
    format!("{configs} config(s) × {repeats} repeat(s) × {epochs} epoch(s)")
}

#[test]
fn an_opened_run_shows_the_preset_it_was_measured_with() {
    let dir = tempfile::tempdir().unwrap();
    let (json, journal) = (two_configs().json.clone(), two_configs().journal.clone());
    let measured = loaderbench_measure::results_file::read(&json).unwrap();
    let setup = measured.setup.clone().expect("the run saved its preset");
    let line = plan_line(2, measured.repeats, measured.epochs);

    // Opened from the command line, over the preset the app starts with (seed-light's
    // seven configs).
    let mut harness = app(dir.path(), vec![json.clone()]);
    harness.run_steps(3);
    assert_eq!(harness.state().preset(), &setup);
    assert!(
        harness.query_by_label(&line).is_some(),
        "`{line}` in the header"
    );
    assert!(!harness.state().title().ends_with('*'), "no unsaved edits");

    // Opened from the path field after starting a new preset.
    harness
        .get_by_role_and_label(Role::Button, "Preset")
        .click();
    harness.run_steps(2);
    harness.get_by_role_and_label(Role::Button, "New").click();
    harness.run_steps(2);
    assert_eq!(harness.state().preset().name, "untitled");
    assert!(
        harness.query_by_label(&line).is_none(),
        "the new preset's line"
    );
    open_from_path_field(&mut harness, &journal);
    assert_eq!(harness.state().preset(), &setup);
    assert!(
        harness.query_by_label(&line).is_some(),
        "`{line}` in the header"
    );

    // A preset named on the command line beside the run stays in the panel.
    let launch = Launch {
        preset: Some("seed-heavy".to_owned()),
        results: vec![json],
        journal_dir: Some(dir.path().to_path_buf()),
        ..Launch::default()
    };
    let mut harness = common::gui::builder()
        .with_size([1280.0, 800.0])
        .build_eframe(move |cc| App::new(cc, launch));
    harness.run_steps(3);
    assert_eq!(harness.state().preset().name, "seed-heavy");
    assert!(harness.state().result().is_some(), "and the run is shown");
}

/// The run saved in `json` with every config quiet (so the analysis names one and hands
/// over its preset lines) and measured with a custom pipeline, whose RON is one long
/// line of the snippet.
fn with_a_long_snippet(json: &Path, dir: &Path) -> PathBuf {
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let pipeline = serde_json::json!({"custom": {"name": "augment", "ops": [
        {"rotate": {"degrees": 30.0}},
        {"elastic": {"alpha": 50.0, "sigma": 5.0}},
        {"gaussian_blur": {"kernel": 5, "sigma": [0.1, 2.0]}},
        {"crop": {"size": [24, 24], "padding": 4}},
        {"flip": {"p": 0.5}},
        "normalize"
    ]}});
    for config in run["configs"].as_array_mut().unwrap() {
        config["pipeline"] = pipeline.clone();
    }
    for result in run["results"].as_array_mut().unwrap() {
        result["config"]["pipeline"] = pipeline.clone();
        result["disturbed"] = false.into();
        result["other_load_cores"] = 0.0.into();
    }
    let path = dir.join("long-snippet.json");
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

#[test]
fn the_analysis_png_holds_the_whole_snippet_and_its_copy_button() {
    let dir = tempfile::tempdir().unwrap();
    let long = with_a_long_snippet(&two_configs().json, dir.path());
    // As tall as the analysis needs, as `report --png --view analysis` draws it.
    let launch = Launch {
        results: vec![long.clone()],
        journal_dir: Some(dir.path().to_path_buf()),
        ..Launch::default()
    };
    let mut harness = common::gui::builder()
        .with_size([loaderbench_gui::WINDOW_SIZE[0], 2400.0])
        .build_eframe(move |cc| App::new(cc, launch));
    harness.run_steps(3);
    let analysis = harness.state().analysis().expect("analysed").clone();
    let snippet = analysis.recommendations[0]
        .snippet
        .clone()
        .expect("a quiet run names a config");
    assert!(snippet.contains("custom(name:"), "{snippet}");
    let exported = harness.state().area_rect(PngArea::Analysis).unwrap();
    for (what, rect) in [
        ("snippet", harness.get_by_label(&snippet).rect()),
        ("Copy", harness.get_by_label("Copy").rect()),
        (
            "scaling chart",
            harness.state().chart_rect(ChartId::Scaling).unwrap(),
        ),
    ] {
        assert!(
            exported.expand(0.5).contains_rect(rect),
            "the {what} at {rect:?} lies outside the exported {exported:?}"
        );
    }

    // Drawn without a window, the PNG is that area.
    let result = harness.state().result().unwrap().clone();
    let png = loaderbench_gui::render_png(vec![(long, result)], PngArea::Analysis, 1.0).unwrap();
    let png = image::load_from_memory(&png).unwrap();
    assert!(
        (png.width() as f32 - exported.width()).abs() <= 2.0
            && (png.height() as f32 - exported.height()).abs() <= 2.0,
        "{}×{} vs {exported:?}",
        png.width(),
        png.height()
    );
}

#[test]
fn a_name_egui_s_fonts_lack_draws_as_a_box_in_the_png() {
    let dir = tempfile::tempdir().unwrap();
    let json = two_configs().json.clone();
    let mut named = loaderbench_measure::results_file::read(&json).unwrap();
    named.labels[0] = format!("{} ● 模型", named.labels[0]);
    let png = loaderbench_gui::render_png(
        vec![(dir.path().join("named.json"), named)],
        PngArea::Results,
        1.0,
    )
    .unwrap();
    assert!(image::load_from_memory(&png).unwrap().width() > 400);
}

#[test]
fn a_run_that_failed_is_drawn_with_what_it_measured() {
    // A killed run's journal reads as failed: its PNG was refused with the app's message.
    let dir = tempfile::tempdir().unwrap();
    let json = two_configs().json.clone();
    let mut failed = loaderbench_measure::results_file::read(&json).unwrap();
    failed.results.truncate(1);
    failed.status = loaderbench_measure::results::RunStatus::Failed {
        error: loaderbench_measure::NEVER_ENDED.to_owned(),
    };
    for area in [PngArea::Plots, PngArea::Analysis] {
        let png = loaderbench_gui::render_png(
            vec![(dir.path().join("failed.json"), failed.clone())],
            area,
            1.0,
        )
        .unwrap();
        assert!(image::load_from_memory(&png).unwrap().width() > 400);
    }
}

#[test]
fn report_draws_the_apps_png_without_a_display() {
    let dir = tempfile::tempdir().unwrap();
    let json = two_configs().json.clone();

    // The app's own export of the same run, at the window's default size.
    let mut harness =
        app_on_saved_runs(dir.path(), vec![json.clone()], loaderbench_gui::WINDOW_SIZE);
    harness
        .state_mut()
        .set_export_path(dir.path().join("app.md"));
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::E);
    let from_app = dir.path().join("app-plots.png");
    common::gui::step_until(&mut harness, Duration::from_secs(60), |_| from_app.exists());
    let from_app = common::whole_png(&from_app);

    let png = dir.path().join("report.png");
    let output = run_with_deadline(
        loaderbench_command(&[
            "report",
            json.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY"),
        Duration::from_secs(120),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let from_report = image::open(&png).unwrap().to_rgba8();
    assert_eq!(from_report.dimensions(), from_app.dimensions());
    let mut colors: Vec<[u8; 4]> = from_report.pixels().map(|p| p.0).collect();
    colors.sort_unstable();
    colors.dedup();
    assert!(colors.len() > 20, "a blank image: {} colours", colors.len());
    // The same renderer draws both: the report's image is the app's, pixel for pixel but
    // for a few (what the mouse hovers, a message line).
    let differing = from_report
        .pixels()
        .zip(from_app.pixels())
        .filter(|(report, app)| report != app)
        .count();
    let share = differing as f64 / from_report.pixels().len() as f64;
    assert!(share < 0.02, "{:.1}% of the pixels differ", share * 100.0);
    assert!(
        !stderr(&output).contains("error"),
        "nothing but warnings: {}",
        stderr(&output)
    );
}

#[test]
fn a_cli_run_draws_the_png_of_what_it_measured_without_a_display() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("run.png");
    let output = run_with_deadline(
        loaderbench_command(&[
            "run",
            "seed-light",
            "-q",
            "--set",
            "samples=256",
            "--set",
            "num_workers=0",
            "--set",
            "extra_configs=[]",
            "--png",
            png.to_str().unwrap(),
            "--view",
            "results",
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY"),
        Duration::from_secs(120),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let (width, height) = image::open(&png).unwrap().to_rgba8().dimensions();
    assert!(width > 400 && height > 200, "{width}×{height}");
}

#[test]
fn a_journal_cut_mid_write_is_a_recent_run_with_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(&two_configs().journal).unwrap();
    // The end line and part of the second config's line gone, as a killed run leaves it.
    std::fs::write(dir.path().join("cut.jsonl"), &whole[..whole.len() - 200]).unwrap();
    let mut harness = app(dir.path(), Vec::new());
    click(&mut harness, "File");
    click(&mut harness, "Recent runs");
    harness
        .get_by_label_contains("failed, 1 of 2 configs")
        .click();
    harness.run_steps(3);
    let result = harness.state().result().expect("the cut journal opens");
    assert_eq!(result.results.len(), 1);
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.ends_with("line 3 is cut: the run stopped mid-write; 1 config kept")),
        "{:?}",
        result.warnings
    );
}
