//! Tune against the full grid, per preset (seed-light, seed-heavy and seed-light-pytorch;
//! `cargo bench --bench tune -- NAME` for one): the full grid three times (`loaderbench
//! run`), then tune five times (`loaderbench tune`) with a budget of a quarter of one
//! grid run's wall time, each a fresh process. Prints, per preset: the budget ratio
//! (tune's budget over a grid run's time, and what the tunes used); how often tune's
//! recommendation is in the grid's best set (the three grid runs as three rounds of the
//! recommendation's own rule; goal 5 of 5); its regret, tune's pick against the grid's
//! pick timed side by side in each grid round (the median of the per-round ratios; goal
//! within 5%); and the model's prediction error per config, the median over the tunes.
//! Recommendations are read as if no measurement were disturbed (the benchmark's own
//! load is not the question); the count of disturbed ones is printed. Under `cargo test`
//! (no `--bench`) it runs a smoke version: seed-light on 2,048 samples, the grid once,
//! tune once.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use loaderbench_measure::results_file;
use loaderbench_measure::stats;

use common::{best_set, loaderbench, merged, names, paired_ratio};

fn main() {
    let (full, named) = common::bench_args();
    let presets: Vec<&str> = if !named.is_empty() {
        named.iter().map(String::as_str).collect()
    } else if full {
        vec!["seed-light", "seed-heavy", "seed-light-pytorch"]
    } else {
        vec!["seed-light"]
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    for preset in presets {
        against_the_grid(dir.path(), preset, full);
    }
}

/// Grid runs and tunes of one preset, and what they say side by side.
fn against_the_grid(dir: &Path, preset: &str, full: bool) {
    let (grids, tunes) = if full { (3, 5) } else { (1, 1) };
    let sets: &[&str] = if full {
        &[]
    } else {
        &["--set", "samples=2048"]
    };
    let mut grid_runs = Vec::new();
    let mut grid_s = Vec::new();
    for round in 0..grids {
        let json = dir.join(format!("{preset}-grid-{round}.json"));
        let started = Instant::now();
        let mut args = vec!["run", preset, "--quiet"];
        args.extend_from_slice(sets);
        loaderbench(&args, &json);
        grid_s.push(started.elapsed().as_secs_f64());
        let mut run = results_file::read(&json).expect("the grid's results");
        for result in &mut run.results {
            result.repeat = round;
        }
        grid_runs.push(run);
    }
    let grid = merged(&grid_runs);
    let (grid_best, grid_pick) = best_set(&grid);
    let grid_mean_s = stats::median(&grid_s).unwrap_or(f64::NAN);
    // At most a quarter of every grid run (5 s at the least: below that a tune measures
    // little more than its anchors).
    let shortest_s = grid_s.iter().copied().fold(f64::INFINITY, f64::min);
    let budget_s = (shortest_s / 4.0).floor().max(5.0);
    let mut in_best = 0;
    let mut regrets = Vec::new();
    let mut used = Vec::new();
    let mut errors: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut picks = Vec::new();
    for attempt in 0..tunes {
        let json = dir.join(format!("{preset}-tune-{attempt}.json"));
        let budget = format!("{budget_s}s");
        let mut args = vec!["tune", preset, "--quiet", "--budget", &budget];
        args.extend_from_slice(sets);
        loaderbench(&args, &json);
        let tuned = results_file::read(&json).expect("the tune's results");
        let trail = tuned.tune.as_ref().expect("a tune's trail");
        used.push(trail.used_s);
        for config in &trail.configs {
            if let Some(error) = config.prediction_error() {
                errors
                    .entry(tuned.labels[config.config].clone())
                    .or_default()
                    .push(error.abs());
            }
        }
        let (_, pick) = best_set(&tuned);
        let Some(pick) = pick else {
            picks.push("nothing".to_owned());
            continue;
        };
        picks.push(grid.labels[pick].clone());
        in_best += usize::from(grid_best.contains(&pick));
        if let Some(regret) = grid_pick.and_then(|best| paired_ratio(&grid, pick, best)) {
            regrets.push(regret - 1.0);
        }
    }
    let disturbed = grid.results.iter().filter(|r| r.disturbed).count();
    println!("tune: {preset}");
    println!(
        "  grid: {grids} run(s) of {} configs, {grid_mean_s:.1} s each (median); best set: {}; \
         pick: {}; {disturbed} of {} measurements disturbed",
        grid.configs.len(),
        names(&grid, &grid_best),
        grid_pick.map_or("nothing", |i| grid.labels[i].as_str()),
        grid.results.len()
    );
    println!(
        "  budget {budget_s:.0} s = {:.2} of a grid run; the tunes used {} s",
        budget_s / grid_mean_s,
        used.iter()
            .map(|s| format!("{s:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  tune's pick in the grid's best set: {in_best} of {tunes} (picks: {})",
        picks.join(", ")
    );
    let regret = stats::median(&regrets);
    println!(
        "  regret against the grid's pick, per-round ratio, median over tunes: {} (goal within 5%)",
        regret.map_or("-".to_owned(), |r| format!("{:+.1}%", r * 100.0))
    );
    let model: Vec<String> = errors
        .iter()
        .filter_map(|(label, e)| Some(format!("{label} {:.0}%", stats::median(e)? * 100.0)))
        .collect();
    println!(
        "  model error per config (median |predicted − measured| / measured): {}",
        model.join(", ")
    );
}
