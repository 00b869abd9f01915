//! The analysis in the desktop app through egui_kittest: after a tiny run, the
//! recommendation is shown (a quiet saved run's with its snippet and a working Copy
//! button), the ledger and
//! scaling charts describe every config, so do where the time goes, the memory and the
//! throughput (each value the run's own), a baseline is saved and compared from the
//! window (under a temporary `LOADERBENCH_DATA_DIR`), and the analysis section exports
//! as a PNG.

use std::path::Path;
use std::time::Duration;

use egui::Key;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use loaderbench_engine::preset::Preset;
use loaderbench_engine::transform::{Op, PipelineSpec};
use loaderbench_gui::{App, Phase};
use loaderbench_measure::results::RunResult;

use crate::common;
use common::gui::{app_on_saved_runs, app_running, pick_baseline, step_until, step_until_ended};
use common::runs::{tiny_preset_file, two_configs};

#[test]
fn a_finished_run_shows_its_analysis_saves_a_baseline_and_exports_it() {
    let dir = tempfile::tempdir().unwrap();
    let name = "a_finished_run_shows_its_analysis_saves_a_baseline_and_exports_it";
    let in_child = common::in_own_process(module_path!(), name, |command| {
        command.env("LOADERBENCH_DATA_DIR", dir.path().join("data"));
    });
    if !in_child {
        return;
    }
    let preset = tiny_preset_file(dir.path(), 512, 2);
    let mut harness = app_running(dir.path(), &preset, [1280.0, 2400.0]);
    step_until_ended(&mut harness, Duration::from_secs(120));
    assert_eq!(harness.state().phase(), Some(&Phase::Finished));

    let analysis = harness
        .state()
        .analysis()
        .expect("analysed at the end")
        .clone();
    let recommendation = analysis
        .recommendations
        .first()
        .expect("a recommendation")
        .clone();
    assert_eq!(
        analysis.recommendations.len(),
        1,
        "one runtime, one question"
    );
    // Its snippet and Copy button: `a_saved_run_s_recommendation_copies_its_snippet`.
    harness.get_by_label(&recommendation.text);
    let charts = harness.state().analysis_charts();
    let ids: Vec<&str> = charts.iter().map(|c| c.id.name()).collect();
    assert_eq!(ids, ["ledger", "scaling", "stages", "memory", "throughput"]);
    assert_eq!(charts[0].x.names, ["nw=0", "nw=2"]);
    assert_eq!(charts[1].series[0].points.len(), 2);
    costs_are_drawn_from_the_run(&charts[2..5], harness.state().result().unwrap());

    harness
        .get_by_role_and_label(Role::TextInput, "baseline")
        .focus();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::TextInput, "baseline")
        .type_text("gui-base");
    harness.run_steps(2);
    harness.get_by_label("Save as baseline").click_accesskit();
    harness.run_steps(2);
    assert!(
        loaderbench_measure::data_dir()
            .join("baselines/gui-base.json")
            .is_file(),
        "{:?}",
        harness.state().messages()
    );
    // The saved baselines are a pick list; picking one compares with it.
    pick_baseline(&mut harness, "gui-base");
    let charts = harness.state().analysis_charts();
    let comparison = charts.last().unwrap();
    assert_eq!(comparison.id, loaderbench_gui::ChartId::Baseline);
    assert_eq!(comparison.series.len(), 2);
    let (before, after) = (&comparison.series[0].points, &comparison.series[1].points);
    assert_eq!(before.len(), 2, "both configs matched");
    for (b, a) in before.iter().zip(after) {
        assert!(
            (a[0] - b[0] - 0.4).abs() < 1e-9,
            "side by side in each group"
        );
        assert_eq!(a[1], b[1], "the same run as its own baseline");
    }

    harness.run_ok();
    harness
        .state_mut()
        .set_export_path(dir.path().join("out.md"));
    harness.get_by_label("PNG: analysis").click_accesskit();
    let png = dir.path().join("out-analysis.png");
    step_until(&mut harness, Duration::from_secs(60), |_| png.exists());
    let image = common::whole_png(&png);
    let rect = harness.state().analysis_rect().unwrap();
    // Drawn without a window, the analysis PNG holds the whole section too (the saved
    // run, without the baseline comparison).
    let result = harness.state().result().unwrap().clone();
    let headless = loaderbench_gui::render_png(
        vec![(dir.path().join("tiny.json"), result)],
        loaderbench_gui::PngArea::Analysis,
        1.0,
    )
    .unwrap();
    let headless = image::load_from_memory(&headless).unwrap();
    assert!(
        (headless.width() as f32 - rect.width()).abs() <= 2.0,
        "{} vs {rect:?}",
        headless.width()
    );
    // Three rows of charts (each over 200 points) and the recommendation: more than
    // the default window shows below the plots and the table.
    assert!(headless.height() > 720, "{}", headless.height());
    assert!(
        (image.width() as f32 - rect.width()).abs() <= 2.0,
        "{:?} vs {rect:?}",
        image.dimensions()
    );
    assert!(
        (image.height() as f32 - rect.height()).abs() <= 2.0,
        "{:?} vs {rect:?}",
        image.dimensions()
    );
}

/// The recommendation of a run measured on a quiet machine (the shared saved run, see
/// `common::runs::saved_run`) names a config, shows the preset lines to paste, and its
/// Copy button puts them on the clipboard.
#[test]
fn a_saved_run_s_recommendation_copies_its_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let saved = two_configs();
    let mut harness = app_on_saved_runs(dir.path(), vec![saved.json.clone()], [1280.0, 2400.0]);
    let analysis = harness.state().analysis().expect("analysed").clone();
    let recommendation = &analysis.recommendations[0];
    let snippet = recommendation
        .snippet
        .clone()
        .expect("a quiet run names a config");
    assert!(
        recommendation.text.starts_with("Use nw="),
        "{}",
        recommendation.text
    );
    assert!(snippet.contains("runtime: [loaderbench],"), "{snippet}");
    harness.get_by_label(&snippet);
    harness.get_by_label("Copy").click();
    harness.run_steps(1);
    let copied =
        harness.output().platform_output.commands.iter().any(
            |command| matches!(command, egui::OutputCommand::CopyText(text) if *text == snippet),
        );
    assert!(copied, "Copy puts the snippet on the clipboard");
}

/// Where the time goes, memory and throughput: a series per stage, per kind of process
/// and per rate, with the values of the run's own results.
fn costs_are_drawn_from_the_run(charts: &[loaderbench_gui::Chart], result: &RunResult) {
    let [stages, memory, throughput] = charts else {
        panic!("three charts");
    };
    assert_eq!(stages.title, "Where the time goes");
    assert_eq!(stages.series.len(), 8, "seven stages and the wait");
    assert_eq!(stages.series.last().unwrap().name, "wait");
    assert_eq!(stages.x.names, ["nw=0", "nw=2"]);
    let second_epoch = |config: usize| {
        let run = result.results.iter().find(|r| r.config_index == config);
        run.unwrap().epochs[1].clone()
    };
    for config in 0..2 {
        let epoch = second_epoch(config);
        let wait_ms = epoch.stages.wait_s / epoch.batches as f64 * 1e3;
        let drawn = stages.series[7].points[config][1];
        assert!((drawn - wait_ms).abs() < 1e-9, "{drawn} vs {wait_ms}");
        let read_ms = epoch.stages.read_s / epoch.batches as f64 * 1e3;
        assert!((stages.series[1].points[config][1] - read_ms).abs() < 1e-9);
    }

    assert_eq!(memory.title, "Memory");
    let names: Vec<&str> = memory.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["main"], "thread workers: the main process alone");
    let mains = &memory.series[0].points;
    assert_eq!(mains.len(), 2, "a bar per config");
    // The config's memory: the epoch whose processes' PSS summed the highest.
    let peak = result.results[0]
        .memory_peak()
        .expect("sampled")
        .main_pss_bytes;
    assert!((mains[0][1] - peak as f64 / (1024.0 * 1024.0)).abs() < 1e-9);

    assert_eq!(throughput.title, "Throughput");
    let names: Vec<&str> = throughput.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["num_workers steady", "num_workers whole epoch"]);
    let whole = &throughput.series[1].points;
    assert_eq!(whole.iter().map(|p| p[0]).collect::<Vec<_>>(), [0.0, 2.0]);
    for (config, point) in whole.iter().enumerate() {
        assert!((point[1] - second_epoch(config).throughput).abs() < 1e-9);
    }
}

/// The app on `preset` (saved in `dir`, its journal there too), measuring with the
/// real program, with Run pressed.
fn run_in_app(dir: &Path, preset: &Preset) -> Harness<'static, App> {
    let path = dir.join("open.ron");
    preset.save(&path).unwrap();
    common::gui::app_running(dir, &path, [1280.0, 1200.0])
}

#[test]
fn a_run_whose_recommendation_is_open_is_measured_further_in_the_window() {
    // One round of two epochs shows nothing of the noise: the app goes on measuring the
    // configs the recommendation hinges on, appending to the run's journal, and shows
    // the run again with the new rounds and its verdict.
    let dir = tempfile::tempdir().unwrap();
    let preset = Preset {
        resolve_for_s: 6.0,
        ..common::runs::tiny_preset(512, 2)
    };
    let mut harness = run_in_app(dir.path(), &preset);
    step_until(&mut harness, Duration::from_secs(60), |app| {
        app.phase() == Some(&Phase::Finished)
    });
    harness.step();
    assert!(
        harness.state().is_running(),
        "measuring further: {:?}",
        harness.state().messages()
    );
    assert!(
        harness.query_by_label_contains("Not resolved: ").is_some(),
        "the run bar says so"
    );
    common::gui::step_until_ended(&mut harness, Duration::from_secs(120));
    harness.run_steps(2);
    let result = harness.state().result().expect("the run").clone();
    assert!(
        result.results.iter().any(|r| r.repeat >= 1),
        "{:?}",
        harness.state().messages()
    );
    let journal = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .expect("the run's journal");
    let journaled = loaderbench_measure::results_file::read(&journal).unwrap();
    assert_eq!(
        journaled.results.len(),
        result.results.len(),
        "all journaled"
    );
    let analysis = harness.state().analysis().expect("analysed again").clone();
    let text = &analysis.recommendations[0].text;
    assert!(text.contains(" Verdict: "), "{text}");
    assert!(
        harness
            .query_by_label_contains("then measured further: ")
            .is_some(),
        "the run bar counts the rounds measured further, not only the sweep's time"
    );
    assert!(
        harness.query_by_label_contains(" Verdict: ").is_some(),
        "the verdict is shown"
    );
}

/// The app showing the saved run `results`, measuring with this build's `loaderbench`,
/// journals in `dir`.
fn measuring_app_on(dir: &Path, results: &Path) -> Harness<'static, App> {
    let launch = loaderbench_gui::Launch {
        results: vec![results.to_path_buf()],
        journal_dir: Some(dir.to_path_buf()),
        measurer: Some(env!("CARGO_BIN_EXE_loaderbench").into()),
        ..loaderbench_gui::Launch::default()
    };
    let mut harness = common::gui::builder()
        .with_size([1280.0, 1200.0])
        .build_eframe(move |cc| App::new(cc, launch));
    harness.run_steps(3);
    harness
}

/// A journal from another machine is refused when measured further: the message says
/// why, the journal is untouched, and the run bar claims nothing measured.
#[test]
fn measure_further_refuses_a_journal_from_another_machine() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("run.jsonl");
    let preset = tiny_preset_file(dir.path(), 512, 2);
    let output = common::loaderbench(&[
        "run",
        common::path_str(&preset),
        "--quiet",
        "--journal",
        common::path_str(&journal),
    ]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    common::runs::from_another_machine(&journal, &journal);
    let moved = std::fs::read_to_string(&journal).unwrap();
    let mut harness = measuring_app_on(dir.path(), &journal);
    common::gui::click(&mut harness, "Measure further");
    step_until_ended(&mut harness, Duration::from_secs(60));
    harness.run_steps(2);
    let messages = harness.state().messages();
    assert!(
        messages
            .iter()
            .any(|m| m.text.starts_with("Measuring further failed: ")
                && m.text.contains("was measured on Made-up Xeon 9999 · ")),
        "{messages:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        moved,
        "untouched"
    );
    assert!(
        harness
            .query_by_label_contains("then measured further")
            .is_none(),
        "nothing was measured further"
    );
}

/// A preset whose recommendations stay open: two pipelines, each its own question, and in
/// each two configs that are one loader (one worker hands its batches out in order either
/// way), with no tie margin, so neither is faster but by chance, nor equally fast within
/// 0%. A round that settles one question by chance (one in twenty, at its 95% interval)
/// leaves the other open; one question alone was settled by chance on a busy CI machine,
/// an A/A copy flooring its noise or not. (A prefetch queue of 2 or 3 batches resolved in
/// 12–18 s.)
fn open_preset() -> Preset {
    Preset {
        tie_margin: 0.0,
        in_order: vec![true, false],
        num_workers: vec![1],
        pipeline: vec![
            PipelineSpec::Light,
            PipelineSpec::Custom {
                name: "costly".to_owned(),
                ops: vec![Op::Cost {
                    micros_per_sample: 200,
                }],
            },
        ],
        ..common::runs::tiny_preset(512, 2)
    }
}

/// `preset` run by the CLI as a process, saved in `dir` (its journal and results).
fn measured_by_the_cli(dir: &Path, preset: Preset) -> common::runs::SavedRun {
    let saved = common::runs::SavedRun::in_dir(dir);
    let path = dir.join("open.ron");
    preset.save(&path).unwrap();
    let output = common::loaderbench(&saved.run_args(common::path_str(&path), &[]));
    assert!(output.status.success(), "{}", common::stderr(&output));
    saved
}

/// A journal opened alone, whose recommendation is open, is measured further with the
/// Measure further button, within the budget field's seconds, appending to the journal;
/// the run bar says what it measured. The same run opened from its results JSON has no
/// journal to append to, and the button stays grey.
#[test]
fn measure_further_measures_an_opened_journal_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let saved = measured_by_the_cli(
        dir.path(),
        Preset {
            repeats: 2,
            ..open_preset()
        },
    );
    let read = |path: &Path| loaderbench_measure::results_file::read(path).unwrap();
    let before = read(&saved.journal).results.len();
    let further_disabled = |harness: &Harness<'_, App>| {
        harness
            .get_by_role_and_label(Role::Button, "Measure further")
            .accesskit_node()
            .is_disabled()
    };
    assert!(
        further_disabled(&measuring_app_on(dir.path(), &saved.json)),
        "a results file"
    );
    let mut harness = measuring_app_on(dir.path(), &saved.journal);
    assert!(
        !further_disabled(&harness),
        "{:?}",
        harness.state().messages()
    );
    common::gui::type_into_role(&mut harness, Role::SpinButton, "budget s", "5");
    common::gui::click(&mut harness, "Measure further");
    assert!(
        harness.state().is_running(),
        "measuring further: {:?}",
        harness.state().messages()
    );
    step_until_ended(&mut harness, Duration::from_secs(120));
    harness.run_steps(2);
    let journaled = read(&saved.journal);
    assert!(
        journaled.results.len() > before,
        "{before} configs: {:?}",
        harness.state().messages()
    );
    let shown = harness.state().result().expect("the run");
    assert_eq!(shown.results.len(), journaled.results.len(), "shown again");
    // The rounds it began, counted (not the last one's number among the run's rounds).
    let mut rounds: Vec<usize> = journaled.results.iter().map(|r| r.repeat).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let further = rounds.len() - 2;
    let said = format!(
        "Finished (a saved run), then measured further: {further} round{} in ",
        if further == 1 { "" } else { "s" }
    );
    assert!(
        harness.query_by_label_contains(&said).is_some(),
        "the run bar says what it measured: {said}"
    );
}

/// An opened journal whose verdicts are open offers, beside the budget field, how long
/// they ask to be measured further (each question's `--resolve-for`, from what its
/// configs took, summed); clicking it sets the budget, and the offer goes. The verdicts
/// said "--resolve-for 5m" to every run, which an app user had to read and type.
#[test]
fn measure_further_offers_the_budget_the_open_verdicts_ask_for() {
    let dir = tempfile::tempdir().unwrap();
    let saved = measured_by_the_cli(dir.path(), open_preset());
    // As measured on a quiet machine: a config measured only while disturbed names no
    // config, and asks for a quiet machine rather than for time.
    let journal = std::fs::read_to_string(&saved.journal).unwrap();
    let quiet: Vec<String> = (journal.lines())
        .map(|line| {
            let mut entry: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(disturbed) = entry.pointer_mut("/result/disturbed") {
                *disturbed = false.into();
            }
            entry.to_string()
        })
        .collect();
    std::fs::write(&saved.journal, quiet.join("\n") + "\n").unwrap();
    let mut harness = measuring_app_on(dir.path(), &saved.journal);
    let shown = harness.state().result().expect("the run").clone();
    let recommendations = loaderbench_analysis::Analysis::of(&shown).recommendations;
    let asked: f64 = (recommendations.iter())
        .filter_map(|r| r.verdict.measure_for_s)
        .sum();
    // Configs of a tenth of a second: a minute for each open question.
    assert!(asked >= 60.0 && asked % 60.0 == 0.0, "{recommendations:#?}");
    let budget = |harness: &Harness<'_, App>| {
        let field = harness.get_by_role_and_label(Role::SpinButton, "budget s");
        field.accesskit_node().numeric_value()
    };
    common::gui::type_into_role(&mut harness, Role::SpinButton, "budget s", "5");
    assert_eq!(budget(&harness), Some(5.0));
    let offer = format!("{asked} s, as the verdicts ask");
    common::gui::click(&mut harness, &offer);
    harness.run_steps(2);
    assert_eq!(budget(&harness), Some(asked));
    assert!(
        harness.query_by_label_contains(&offer).is_none(),
        "offered once set"
    );
}

/// While the app measures a finished run further, the rounds that have ended are shown,
/// with the analysis redone (it showed the sweep's "after 1 round" until the resolve
/// ended). Cancel stops the rounds and keeps them; the run stays finished (its sweep
/// finished), and a note says what happened.
#[test]
fn the_rounds_after_a_run_are_shown_as_they_end_and_cancel_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let preset = Preset {
        resolve_for_s: 600.0,
        ..open_preset()
    };
    let mut harness = run_in_app(dir.path(), &preset);
    // Cancelled once a round has begun (the rounds' process is up and listening).
    common::wait_until(Duration::from_secs(90), "a resolving round", || {
        harness.step();
        harness
            .query_by_label_contains("Not resolved: round")
            .is_some()
    });
    let measured_further = |harness: &Harness<'_, App>| {
        let result = harness.state().result().expect("the run");
        result.results.iter().any(|r| r.repeat >= 1)
    };
    common::wait_until(Duration::from_secs(90), "a round shown", || {
        harness.step();
        measured_further(&harness)
    });
    assert!(
        harness.state().is_running(),
        "still measuring further: {:?}",
        harness
            .state()
            .analysis()
            .map(|a| &a.recommendations[0].text)
    );
    let shown = harness.state().result().expect("the run");
    assert_eq!(
        harness.state().analysis(),
        Some(&loaderbench_analysis::Analysis::of(shown)),
        "the analysis of the rounds shown"
    );
    harness.key_press(Key::Escape);
    common::gui::step_until_ended(&mut harness, Duration::from_secs(60));
    harness.run_steps(2);
    assert!(measured_further(&harness), "the rounds are kept");
    let app = harness.state();
    assert_eq!(app.phase(), Some(&Phase::Finished), "{:?}", app.messages());
    assert!(
        app.messages()
            .iter()
            .any(|m| m.text.contains("Measuring further was stopped")),
        "{:?}",
        app.messages()
    );
}

/// A saved run that measured thread and fork workers at 2 shows their comparison under
/// its title, the analysis' own paragraph.
#[test]
fn thread_and_fork_workers_are_compared_in_the_analysis_section() {
    use loaderbench_engine::plan::Config;
    use loaderbench_engine::preset::WorkerKind;
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    let fork = Config {
        worker_kind: WorkerKind::Fork,
        ..config(2, false)
    };
    let configs = vec![config(2, false), fork];
    let runs = vec![
        run(0, configs[0].clone(), vec![epoch(1, 0.1, 0.01, 11)]),
        run(1, configs[1].clone(), vec![epoch(1, 0.2, 0.02, 11)]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("kinds.json");
    std::fs::write(&json, serde_json::to_vec(&result(configs, runs)).unwrap()).unwrap();
    let harness = app_on_saved_runs(dir.path(), vec![json], [1280.0, 2600.0]);
    let analysis = harness.state().analysis().expect("analysed").clone();
    let [comparison] = &analysis.worker_kinds[..] else {
        panic!("{:?}", analysis.worker_kinds);
    };
    assert!(
        comparison
            .text
            .starts_with("At 2 workers, threads against fork workers"),
        "{}",
        comparison.text
    );
    harness.get_by_label(&format!("Worker kinds: {}", comparison.title));
    harness.get_by_label(&comparison.text);
}
