//! The charts of a saved eight-config run, in the app through egui_kittest and from the
//! command line: a chart whose values span more than 20× starts on a log scale (one
//! that does not, linear), a click on a legend entry hides its series and a second shows
//! it, config names too long for their groups become numbers with a key, where the time
//! goes switches to one bar per epoch with the run's own values, and each chart exports
//! alone as a PNG from the Export menu (scrolled into view first) and with
//! `report --png --view NAME`, from one list. The run is measured once, by the first test
//! that needs it. A saved run with a training step stacks the step on the wait and says
//! how much the workers slowed it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use loaderbench_gui::{App, ChartId, PngArea, chart_view};
use loaderbench_measure::results::RunResult;
use tempfile::TempDir;

use crate::common;
use common::gui::{app_on_saved_runs, click, step_until};
use common::runs::{SavedRun, saved_once};
use common::{assert_said, loaderbench_command, run_with_deadline, stderr, stdout};

/// The results file of a tiny real run of eight configs (num_workers × persistent ×
/// pin), saved by the first test that needs it; the others open the same file.
fn saved_json() -> &'static Path {
    static EIGHT: OnceLock<(TempDir, SavedRun)> = OnceLock::new();
    let swept = [
        "num_workers=1,2",
        "persistent_workers=false,true",
        "pin_memory=false,true",
    ];
    let fixed = [
        "samples=256",
        "batch_size=64",
        "extra_configs=[]",
        "epochs=2",
    ];
    &saved_once(&EIGHT, &[&swept[..], &fixed].concat()).json
}

/// [`saved_json`]'s copy from [`spread_first_batches`], made once.
fn spread_json() -> &'static Path {
    static SPREAD: OnceLock<PathBuf> = OnceLock::new();
    SPREAD.get_or_init(|| spread_first_batches(saved_json()))
}

/// The run with first batches spanning 500× (config 0's 2 ms, the others' 1 s) and
/// epoch times within 2× of each other.
fn spread_first_batches(json: &Path) -> PathBuf {
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    for result in run["results"].as_array_mut().unwrap() {
        let config = result["config_index"].as_u64().unwrap() as f64;
        for epoch in result["epochs"].as_array_mut().unwrap() {
            epoch["first_batch_s"] = if config == 0.0 { 0.002 } else { 1.0 }.into();
            epoch["seconds"] = (1.0 + 0.1 * config).into();
        }
    }
    let path = json.with_file_name("spread.json");
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

fn chart(harness: &Harness<'_, App>, id: ChartId) -> loaderbench_gui::Chart {
    let app = harness.state();
    let mut charts = app.charts();
    charts.extend(app.analysis_charts());
    charts
        .into_iter()
        .find(|c| c.id == id)
        .expect("the chart is drawn")
}

/// The app, tall enough for every chart, on the saved run with first batches spanning
/// 500×, and the run as it shows it; journals go to `dir`.
fn spread_app(dir: &Path) -> (Harness<'static, App>, RunResult) {
    let harness = app_on_saved_runs(dir, vec![spread_json().to_path_buf()], [1280.0, 2600.0]);
    let result: RunResult = harness.state().result().expect("the saved run").clone();
    assert_eq!(result.configs.len(), 8);
    (harness, result)
}

/// Whether the check box `node` is ticked.
fn checked(node: &egui_kittest::Node<'_>) -> bool {
    node.accesskit_node().toggled() == Some(egui::accesskit::Toggled::True)
}

#[test]
fn a_chart_whose_values_span_more_than_20x_starts_on_a_log_scale() {
    let dir = tempfile::tempdir().unwrap();
    let (harness, _) = spread_app(dir.path());
    let first_batch = chart(&harness, ChartId::FirstBatch);
    assert_eq!(first_batch.series.len(), 8, "a series per config");
    assert_eq!(first_batch.series[0].points[0][1], 0.002);
    assert!(
        chart_view(&harness.ctx, &first_batch).log,
        "0.002 s beside 1 s"
    );
    let log_boxes = harness.query_all_by_label("log scale").collect::<Vec<_>>();
    assert!(checked(&log_boxes[0]), "first batch's box is ticked");
}

#[test]
fn a_chart_whose_values_span_less_than_20x_starts_linear() {
    let dir = tempfile::tempdir().unwrap();
    let (harness, _) = spread_app(dir.path());
    let epoch_times = chart(&harness, ChartId::EpochTimes);
    assert!(!chart_view(&harness.ctx, &epoch_times).log, "1 s to 1.7 s");
    let log_boxes = harness.query_all_by_label("log scale").collect::<Vec<_>>();
    assert!(!checked(&log_boxes[1]), "epoch time's is not");
}

#[test]
fn a_click_on_a_legend_entry_hides_its_series_and_a_second_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, _) = spread_app(dir.path());
    let stages = chart(&harness, ChartId::Stages);
    click(&mut harness, "collate");
    assert_eq!(chart_view(&harness.ctx, &stages).hidden, ["collate"]);
    click(&mut harness, "collate");
    assert!(chart_view(&harness.ctx, &stages).hidden.is_empty());
}

#[test]
fn config_names_too_long_for_their_groups_become_numbers_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let (harness, result) = spread_app(dir.path());
    for (index, label) in result.labels.iter().enumerate() {
        let key = format!("{} {label}", index + 1);
        assert!(
            harness.query_all_by_label(&key).count() >= 3,
            "ledger, stages and memory each have a key with `{key}`"
        );
    }
}

#[test]
fn where_the_time_goes_per_epoch_has_a_bar_per_epoch_with_the_run_s_values() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, result) = spread_app(dir.path());
    click(&mut harness, "per epoch");
    let per_epoch = chart(&harness, ChartId::Stages);
    assert_eq!(per_epoch.title, "Where the time goes, per epoch");
    assert_eq!(per_epoch.series.len(), 8, "seven stages and the wait");
    assert_eq!(per_epoch.x.names.len(), 16, "two epochs of eight configs");
    for (group, name) in per_epoch.x.names.iter().enumerate() {
        let (config, epoch) = (group / 2, group % 2);
        assert_eq!(
            *name,
            format!("{} · epoch {}", result.labels[config], epoch + 1)
        );
        let run = result.results.iter().find(|r| r.config_index == config);
        let measured = &run.unwrap().epochs[epoch];
        let wait_ms = measured.stages.wait_s / measured.batches as f64 * 1e3;
        let drawn = per_epoch.series[7].points[group];
        assert_eq!(drawn[0], (group + 1) as f64);
        assert!((drawn[1] - wait_ms).abs() < 1e-9, "{drawn:?} vs {wait_ms}");
    }
}

#[test]
fn with_a_step_the_step_stacks_on_the_wait_and_its_contention_is_said() {
    use loaderbench_engine::step::StepSpec;
    use loaderbench_measure::fixtures::{config, epoch_with_wait, result, run};
    // nw=0 steps in 4 ms a batch and waits 6 ms; nw=2 steps in 5.6 ms.
    let epoch = |step_ms: f64, wait_s: f64| {
        let mut epoch = epoch_with_wait(1, 0.1, 0.01, 11, wait_s);
        epoch.stages.step_s = step_ms / 1e3 * 11.0;
        epoch
    };
    let configs = vec![config(0, false), config(2, false)];
    let runs = vec![
        run(0, configs[0].clone(), vec![epoch(4.0, 0.006)]),
        run(1, configs[1].clone(), vec![epoch(5.6, 0.0005)]),
    ];
    let mut saved = result(configs, runs);
    saved.step = StepSpec::Fixed(4.0);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("step.json");
    std::fs::write(&json, serde_json::to_vec(&saved).unwrap()).unwrap();
    let harness = app_on_saved_runs(dir.path(), vec![json], [1280.0, 2600.0]);
    let stages = chart(&harness, ChartId::Stages);
    let names: Vec<&str> = stages.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names[names.len() - 2..], ["wait", "step"], "{names:?}");
    // One epoch each shows no noise to judge the slowdown by.
    harness.get_by_label(
        "nw=2: 2 workers may slow your step by 40%, not resolved (5.6 ms per batch, 4.0 ms at \
         nw=0, no noise measured to judge it by): measure more epochs or repeats",
    );
    harness.get_by_label("input-bound 60% at nw=0, 5% at nw=2");
}

#[test]
fn a_chart_exports_alone_as_a_png_from_the_export_menu() {
    let dir = tempfile::tempdir().unwrap();
    let (mut harness, _) = spread_app(dir.path());
    let (width, height) = export_chart(&mut harness, dir.path(), ChartId::Memory);
    let rect = harness.state().chart_rect(ChartId::Memory).unwrap();
    assert!(
        (width as f32 - rect.width()).abs() <= 2.0 && (height as f32 - rect.height()).abs() <= 2.0,
        "{width}×{height} vs {rect:?}"
    );
    let analysis = harness.state().area_rect(PngArea::Analysis).unwrap();
    assert!(
        rect.width() < analysis.width() * 0.6,
        "half the analysis' width"
    );
}

#[test]
fn the_memory_legend_lists_only_the_kinds_of_process_that_have_bars() {
    let dir = tempfile::tempdir().unwrap();
    let json = saved_json();
    // Thread workers: no worker processes, so no workers' bars nor entry.
    let harness = app_on_saved_runs(dir.path(), vec![json.to_path_buf()], [1280.0, 2600.0]);
    let memory = chart(&harness, ChartId::Memory);
    let names: Vec<&str> = memory.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["main"]);
    assert!(harness.query_by_label("workers").is_none());
    drop(harness);

    // The same run with worker processes in one config's epochs lists them.
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    for epoch in run["results"][1]["epochs"].as_array_mut().unwrap() {
        let memory = &mut epoch["memory"];
        let peak = memory["peak_pss_bytes"].as_u64().unwrap();
        memory["worker_pss_bytes"] = (16u64 << 20).into();
        memory["peak_pss_bytes"] = (peak + (16 << 20)).into();
    }
    let with_workers = dir.path().join("workers.json");
    std::fs::write(&with_workers, serde_json::to_vec(&run).unwrap()).unwrap();
    let harness = app_on_saved_runs(dir.path(), vec![with_workers], [1280.0, 2600.0]);
    let memory = chart(&harness, ChartId::Memory);
    let names: Vec<&str> = memory.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["main", "workers"]);
    assert_eq!(
        memory.series[1].points[1][1], 16.0,
        "the second config's workers"
    );
    assert!(harness.query_by_label("workers").is_some());
}

/// Exports chart `id` through Export → Chart as PNG; returns the PNG's size.
fn export_chart(harness: &mut Harness<'_, App>, dir: &Path, id: ChartId) -> (u32, u32) {
    harness.state_mut().set_export_path(dir.join("app.md"));
    click(harness, "Export");
    click(harness, "Chart as PNG");
    harness
        .get_by_role_and_label(Role::Button, id.title())
        .click();
    let png = dir.join(format!("app-{}.png", id.name()));
    step_until(harness, Duration::from_secs(60), |_| png.exists());
    common::whole_png(&png).dimensions()
}

#[test]
fn a_chart_below_the_window_scrolls_into_view_to_be_exported_whole() {
    let dir = tempfile::tempdir().unwrap();
    let json = saved_json().to_path_buf();
    let mut harness = app_on_saved_runs(dir.path(), vec![json], loaderbench_gui::WINDOW_SIZE);
    let before = harness.state().chart_rect(ChartId::Throughput).unwrap();
    assert!(
        before.top() > loaderbench_gui::WINDOW_SIZE[1],
        "below the window: {before:?}"
    );
    let (width, height) = export_chart(&mut harness, dir.path(), ChartId::Throughput);
    let rect = harness.state().chart_rect(ChartId::Throughput).unwrap();
    assert!(
        rect.bottom() <= loaderbench_gui::WINDOW_SIZE[1],
        "scrolled into view: {rect:?}"
    );
    assert!(
        (width as f32 - rect.width()).abs() <= 2.0 && (height as f32 - rect.height()).abs() <= 2.0,
        "the whole chart: {width}×{height} vs {rect:?}"
    );
}

/// `report SAVED --png DIR/VIEW.png --view VIEW` without a display: its output and the
/// PNG's path.
fn report_png(dir: &Path, view: &str) -> (Output, PathBuf) {
    let path = dir.join(format!("{view}.png"));
    let output = run_with_deadline(
        loaderbench_command(&[
            "report",
            saved_json().to_str().unwrap(),
            "--png",
            path.to_str().unwrap(),
            "--view",
            view,
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY"),
        Duration::from_secs(120),
    );
    (output, path)
}

#[test]
fn report_help_lists_every_chart_by_the_name_the_app_uses() {
    let help = stdout(&run_with_deadline(
        &mut loaderbench_command(&["report", "--help"]),
        Duration::from_secs(30),
    ));
    for area in PngArea::all() {
        assert!(help.contains(area.name()), "`{}` in {help}", area.name());
    }
}

#[test]
fn report_exports_each_chart_alone_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (output, analysis) = report_png(dir.path(), "analysis");
    assert!(output.status.success(), "{}", stderr(&output));
    let analysis = image::open(&analysis).unwrap().to_rgba8();
    for view in ["stages", "throughput", "first-batch"] {
        let (output, path) = report_png(dir.path(), view);
        assert!(output.status.success(), "{view}: {}", stderr(&output));
        let image = image::open(&path).unwrap().to_rgba8();
        let (width, height) = image.dimensions();
        assert!(width > 300 && height > 150, "{view}: {width}×{height}");
        assert!(
            width <= analysis.width() && height < analysis.height() / 3,
            "{view} alone: {width}×{height} within {:?}",
            analysis.dimensions()
        );
        let mut colors: Vec<[u8; 4]> = image.pixels().map(|p| p.0).collect();
        colors.sort_unstable();
        colors.dedup();
        assert!(colors.len() > 20, "{view}: a blank image");
    }
}

#[test]
fn report_refuses_a_chart_the_run_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = report_png(dir.path(), "rank-spread");
    assert!(!output.status.success(), "no ranks in this run");
    assert_said(&output, "no \"Rank spread\" chart");
}

#[test]
fn report_offers_the_chart_names_for_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = report_png(dir.path(), "nothing");
    assert!(!output.status.success());
    assert!(stderr(&output).contains("stages"), "the names offered");
}
