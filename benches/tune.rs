//! Tune against the full grid, per preset (seed-light, seed-heavy and seed-light-pytorch;
//! `cargo bench --bench tune -- NAME` for one, a built-in preset's name or a preset
//! file): the full grid three times (`loaderbench run`), then tune five times
//! (`loaderbench tune`) with a budget of a quarter of one grid run's wall time
//! (`share=0.5` after `--`: half), each a fresh process. Each question is judged by the
//! reference that measured its configs most: the grid, or, for seed-light-pytorch's
//! loaderbench question, twelve rounds of seed-light (its configs, a second or two a
//! round, spread before, between and after the tunes). Prints, per preset: the budget
//! ratio (tune's budget over a grid run's time, and what the tunes used); per question,
//! how often tune's recommendation is in the reference's best set (its rounds read by the
//! recommendation's own rule; goal 5 of 5) and its worst regret, tune's pick against the
//! reference's fastest config timed side by side in each of its rounds (the median of the
//! per-round ratios; goal within 5%); and the model's prediction error per config, the
//! median over the tunes. Recommendations are read as if no measurement were disturbed
//! (the benchmark's own load is not the question); the count of disturbed ones is
//! printed. Under `cargo test` (no `--bench`) it runs a smoke version: seed-light on
//! 2,048 samples, the grid once, tune once.
//!
//! `against=PATH` after `--` judges a second build beside this one (the `loaderbench`
//! binary of an earlier commit, copied out of `target/release`): after each reference
//! slot, a tune by each build, the two alternating, on the same machine and against the
//! same references; each build's lines then say how many rounds its tunes got and in how
//! many the tune's own verdict was resolved.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use loaderbench_analysis::Analysis;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;
use loaderbench_measure::stats;
use loaderbench_measure::tune_trail::TuneTrail;

use common::{best_set, loaderbench, loaderbench_at, merged, names, regret, undisturbed};

fn main() {
    let (full, named) = common::bench_args();
    // `share=0.5`: the tunes' budget as that share of a grid run, not a quarter.
    let share = named
        .iter()
        .find_map(|n| n.strip_prefix("share=")?.parse::<f64>().ok())
        .unwrap_or(0.25);
    let mut builds = vec![Build {
        name: "this build".to_owned(),
        binary: PathBuf::from(env!("CARGO_BIN_EXE_loaderbench")),
    }];
    builds.extend(named.iter().filter_map(|n| {
        let binary = n.strip_prefix("against=")?;
        Some(Build {
            name: format!("against {binary}"),
            binary: PathBuf::from(binary),
        })
    }));
    let named: Vec<&str> = named
        .iter()
        .map(String::as_str)
        .filter(|n| !n.starts_with("share=") && !n.starts_with("against="))
        .collect();
    let presets: Vec<&str> = if !named.is_empty() {
        named
    } else if full {
        vec!["seed-light", "seed-heavy", "seed-light-pytorch"]
    } else {
        vec!["seed-light"]
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    for preset in presets {
        // The loaderbench question's configs are seed-light's, measured in a second or
        // two a round, where a round of the whole preset takes over a minute and a half:
        // the grid's three rounds cannot place them.
        let references: &[(&str, usize)] = match preset {
            "seed-light-pytorch" if full => &[("seed-light", 12)],
            _ => &[],
        };
        against_the_grid(dir.path(), preset, full, share, references, &builds);
    }
}

/// A `loaderbench` whose tunes are judged.
struct Build {
    name: String,
    binary: PathBuf,
}

/// Grid runs and tunes of one preset by each of `builds`, against the grid and the
/// `references` (each a preset run `rounds` times, spread before, between and after the
/// tunes), and what they say side by side, per question.
fn against_the_grid(
    dir: &Path,
    preset: &str,
    full: bool,
    share: f64,
    references: &[(&str, usize)],
    builds: &[Build],
) {
    let (grids, tunes) = if full { (3, 5) } else { (1, 1) };
    let sets: &[&str] = if full {
        &[]
    } else {
        &["--set", "samples=2048"]
    };
    // A preset given as a path names its files by its own name.
    let name = Path::new(preset)
        .file_stem()
        .map_or(preset.into(), |stem| stem.to_string_lossy());
    let mut grid_runs = Vec::new();
    let mut grid_s = Vec::new();
    for round in 0..grids {
        let json = dir.join(format!("{name}-grid-{round}.json"));
        let started = Instant::now();
        let mut args = vec!["run", preset, "--quiet"];
        args.extend_from_slice(sets);
        loaderbench(&args, &json);
        grid_s.push(started.elapsed().as_secs_f64());
        grid_runs.push(results_file::read(&json).expect("the grid's results"));
    }
    let grid_mean_s = stats::median(&grid_s).unwrap_or(f64::NAN);
    // At most a quarter (the `share`) of every grid run (5 s at the least: below that a
    // tune measures little more than its anchors).
    let shortest_s = grid_s.iter().copied().fold(f64::INFINITY, f64::min);
    let budget_s = (shortest_s * share).floor().max(5.0);
    let mut reference_runs: Vec<Vec<RunResult>> = vec![Vec::new(); references.len()];
    // Each build's tunes.
    let mut tunes_of: Vec<Vec<RunResult>> = vec![Vec::new(); builds.len()];
    for slot in 0..=tunes {
        let slots = (slot, tunes + 1);
        common::reference_rounds(dir, preset, references, sets, slots, &mut reference_runs);
        if slot == tunes {
            break;
        }
        for (index, (build, tuned)) in builds.iter().zip(&mut tunes_of).enumerate() {
            let json = dir.join(format!("{name}-tune-{slot}-{index}.json"));
            let budget = format!("{budget_s}s");
            let mut args = vec!["tune", preset, "--quiet", "--budget", &budget];
            args.extend_from_slice(sets);
            loaderbench_at(&build.binary, &args, &json);
            tuned.push(results_file::read(&json).expect("the tune's results"));
        }
    }
    let grid = undisturbed(&merged(&grid_runs));
    let mut judges = vec![grid.clone()];
    judges.extend(
        reference_runs
            .iter()
            .map(|rounds| undisturbed(&merged(rounds))),
    );
    let disturbed = grid_runs
        .iter()
        .flat_map(|run| &run.results)
        .filter(|r| r.disturbed)
        .count();
    println!("tune: {preset}");
    println!(
        "  grid: {grids} run(s) of {} configs, {grid_mean_s:.1} s each (median); \
         {disturbed} of {} measurements disturbed",
        grid.configs.len(),
        grid.results.len()
    );
    println!(
        "  budget {budget_s:.0} s = {:.2} of a grid run",
        budget_s / grid_mean_s
    );
    for (build, tuned) in builds.iter().zip(&tunes_of) {
        println!(
            "  {}: the tunes used {} s in {} rounds",
            build.name,
            list(tuned.iter().map(|run| format!("{:.1}", trail(run).used_s))),
            list(tuned.iter().map(|run| trail(run).rounds.to_string())),
        );
    }
    for (question, recommendation) in Analysis::of(&grid).recommendations.iter().enumerate() {
        let Some((judge, judged)) = common::judge(&judges, &grid, question) else {
            continue;
        };
        let (best, _) = best_set(&judged);
        let best_labels: Vec<&str> = best.iter().map(|&i| judged.labels[i].as_str()).collect();
        println!("  {}", recommendation.group);
        println!(
            "    judged by {} rounds of {}: best set {}",
            judge.repeats,
            judge.preset,
            names(&judged, &best)
        );
        for (build, tuned) in builds.iter().zip(&tunes_of) {
            let mut picks = Vec::new();
            let mut regrets = Vec::new();
            let mut resolved = 0;
            for run in tuned {
                let answer = Analysis::of(&undisturbed(run))
                    .recommendations
                    .into_iter()
                    .find(|r| r.group == recommendation.group);
                resolved += usize::from(answer.as_ref().is_some_and(|a| {
                    a.verdict.kind != loaderbench_analysis::recommend::VerdictKind::NotResolved
                }));
                let label = answer.and_then(|a| a.label).unwrap_or("nothing".to_owned());
                regrets.extend(regret(&judged, &label));
                picks.push(label);
            }
            let in_best = picks
                .iter()
                .filter(|p| best_labels.contains(&p.as_str()))
                .count();
            let worst = regrets.iter().copied().fold(0.0, f64::max);
            let indent = if builds.len() > 1 {
                println!("    {}:", build.name);
                "      "
            } else {
                "    "
            };
            println!(
                "{indent}tune's pick in the best set: {in_best} of {tunes} (picks: {}; goal {tunes} \
                 of {tunes}); its verdict resolved in {resolved} of {tunes}",
                picks.join(", ")
            );
            println!(
                "{indent}regret against the reference's fastest, per-round ratio: worst {:+.1}% \
                 (goal within 5%)",
                worst * 100.0
            );
        }
    }
    for (build, tuned) in builds.iter().zip(&tunes_of) {
        let mut errors: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for run in tuned {
            for config in &trail(run).configs {
                if let Some(error) = config.prediction_error() {
                    errors
                        .entry(&run.labels[config.config])
                        .or_default()
                        .push(error.abs());
                }
            }
        }
        let model = errors
            .iter()
            .filter_map(|(label, e)| Some(format!("{label} {:.0}%", stats::median(e)? * 100.0)));
        println!(
            "  model error per config (median |predicted − measured| / measured), {}: {}",
            build.name,
            list(model)
        );
    }
}

fn trail(run: &RunResult) -> &TuneTrail {
    run.tune.as_ref().expect("a tune's trail")
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}
