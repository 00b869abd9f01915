//! The analysis as text, for `loaderbench run --recommend`: the start-up ledger as a
//! table, the break-even sentences (a table for three configs or more), one line per
//! scaling curve, the input-bound verdicts, what memory says (copy-on-access, growth
//! across epochs, configs over the limit), thread workers against process workers, and
//! each recommendation with its snippet.

use std::fmt::Write;

use crate::tables::render;

use loaderbench_analysis::scaling::{KNEE_GAIN, ScalingCurve};
use loaderbench_analysis::{Analysis, Recommendation, duration, workers};
use loaderbench_engine::seconds;

/// The whole analysis, sections separated by blank lines.
pub fn text(analysis: &Analysis) -> String {
    let mut text = String::new();
    if !analysis.ledger.is_empty() {
        let _ = writeln!(text, "Start-up ledger (milliseconds, medians)");
        text.push_str(&ledger_table(analysis));
        text.push_str(&savings(analysis));
    }
    if !analysis.scaling.is_empty() {
        let _ = writeln!(text, "\nScaling (steady epoch time against num_workers)");
        for curve in &analysis.scaling {
            let _ = writeln!(text, "{}", scaling_line(curve));
        }
    }
    if !analysis.input_bound.is_empty() || !analysis.contention.is_empty() {
        let _ = writeln!(text, "\nTraining step");
        for line in step_lines(analysis) {
            let _ = writeln!(text, "{line}");
        }
    }
    let memory = analysis.memory.paragraphs(analysis.planned_epochs);
    if !memory.is_empty() {
        let _ = writeln!(text, "\nMemory");
        for paragraph in memory {
            let _ = writeln!(text, "{paragraph}");
        }
    }
    for comparison in &analysis.worker_kinds {
        let _ = writeln!(
            text,
            "\nWorker kinds: {}\n{}",
            comparison.title, comparison.text
        );
    }
    for recommendation in &analysis.recommendations {
        let _ = writeln!(text, "\n{}", recommendation_text(recommendation));
    }
    text
}

/// What the training step met at each config: its input-bound verdict, then how much
/// the workers slowed it against nw=0, then the stall shares in one line.
pub fn step_lines(analysis: &Analysis) -> Vec<String> {
    let verdicts = analysis
        .input_bound
        .iter()
        .map(|v| format!("{}: {}", v.label, v.verdict));
    let contention = analysis
        .contention
        .iter()
        .map(|c| format!("{}: {}", c.label, c.sentence));
    let summary = loaderbench_analysis::contention::input_bound_line(&analysis.input_bound);
    verdicts
        .chain(contention)
        .chain(summary.filter(|_| analysis.input_bound.len() > 1))
        .collect()
}

/// `Recommendation: GROUP`, the paragraph, then the snippet indented by four spaces.
pub fn recommendation_text(recommendation: &Recommendation) -> String {
    let mut text = format!(
        "Recommendation: {}\n{}\n",
        recommendation.group, recommendation.text
    );
    if let Some(snippet) = &recommendation.snippet {
        for line in snippet.lines() {
            let _ = writeln!(text, "    {line}");
        }
    }
    text
}

fn ledger_table(analysis: &Analysis) -> String {
    let header = [
        "config",
        "worker start-up",
        "first batch",
        "steady batch",
        "restart cost",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = analysis
        .ledger
        .iter()
        .map(|row| {
            vec![
                row.label.clone(),
                milliseconds(row.worker_startup_s),
                milliseconds(row.first_batch_s),
                milliseconds(row.steady_batch_s),
                milliseconds(row.restart_cost_s),
            ]
        })
        .collect();
    render(&header, &rows)
}

/// What persistent workers would save: a sentence per config, or, for more configs than
/// a few sentences read well (a wide tune had 17), a table of the same figures.
fn savings(analysis: &Analysis) -> String {
    let savings = &analysis.break_even;
    if savings.len() < SAVINGS_AS_TABLE {
        return savings
            .iter()
            .map(|s| format!("{}.\n", s.sentence))
            .collect();
    }
    let planned = analysis.planned_epochs;
    let header = [
        "config".to_owned(),
        "saved per epoch".to_owned(),
        format!("over {planned} epochs"),
        "from".to_owned(),
    ];
    let rows: Vec<Vec<String>> = savings
        .iter()
        .map(|saving| {
            let per_epoch = saving.saved_per_epoch_s;
            let (per_epoch, total) = if per_epoch > 0.0 {
                (
                    format!("{} s", seconds(per_epoch)),
                    duration(saving.saved_total_s),
                )
            } else if per_epoch < 0.0 {
                let slower = format!("none ({} s slower)", seconds(-per_epoch));
                (slower, "-".to_owned())
            } else {
                ("none".to_owned(), "-".to_owned())
            };
            let twin = saving.persistent_config.and_then(|twin| {
                let row = analysis.ledger.iter().find(|row| row.config == twin)?;
                Some(format!("measured against {}", row.label))
            });
            let from = twin.unwrap_or_else(|| "its restart cost (an upper bound)".to_owned());
            vec![saving.label.clone(), per_epoch, total, from]
        })
        .collect();
    format!(
        "\nWhat persistent workers would save\n{}",
        render(&header, &rows)
    )
}

/// Break-even lines from this many configs on are a table.
const SAVINGS_AS_TABLE: usize = 3;

/// Seconds as milliseconds with one decimal; a dash for no value.
fn milliseconds(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |s| format!("{:.1}", s * 1e3))
}

/// `num_workers: 0 workers 4.40 s, 2 workers 2.20 s; knee at 2 workers; serial fraction 0.11`.
pub fn scaling_line(curve: &ScalingCurve) -> String {
    let points: Vec<String> = curve
        .points
        .iter()
        .map(|p| {
            let seconds = loaderbench_engine::seconds(p.steady_epoch_s);
            format!("{} {seconds} s", workers(p.num_workers))
        })
        .collect();
    let knee = match curve.knee_workers {
        Some(knee) => format!(
            "knee at {} (no larger count gains {:.0}% per worker)",
            workers(knee),
            KNEE_GAIN * 100.0
        ),
        None => "no knee: still scaling at the largest count".to_owned(),
    };
    let fit = curve.fit.map_or_else(String::new, |fit| {
        format!("; serial fraction {:.2}", fit.serial_fraction)
    });
    format!("{}: {}; {knee}{fit}", curve.family, points.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_analysis::scaling::ScalingPoint;
    use loaderbench_measure::fixtures::{config, each_once, epoch, result, run, two_epochs};

    #[test]
    fn one_worker_is_a_worker_in_the_scaling_line() {
        let point = |num_workers, steady_epoch_s| ScalingPoint {
            num_workers,
            config: num_workers,
            steady_epoch_s,
        };
        let curve = ScalingCurve {
            family: "num_workers".to_owned(),
            points: vec![point(0, 2.0), point(1, 1.0), point(2, 0.95)],
            knee_workers: Some(1),
            fit: None,
        };
        assert_eq!(
            scaling_line(&curve),
            "num_workers: 0 workers 2.00 s, 1 worker 1.00 s, 2 workers 0.95 s; knee at 1 worker \
             (no larger count gains 10% per worker)"
        );
    }

    #[test]
    fn report_has_every_section() {
        let configs = vec![config(0, false), config(2, false), config(2, true)];
        let results = vec![
            run(0, config(0, false), two_epochs(0.4, 0.4, 11)),
            run(1, config(2, false), two_epochs(0.5, 0.2, 11)),
            run(
                2,
                config(2, true),
                vec![epoch(1, 0.5, 0.2, 11), epoch(2, 0.2, 0.2, 11)],
            ),
        ];
        let text = text(&Analysis::of(&result(configs, results)));
        assert!(
            text.starts_with("Start-up ledger (milliseconds, medians)\n| config "),
            "{text}"
        );
        let row = text.lines().find(|l| l.starts_with("| nw=2 ")).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(
            cells[1..6],
            ["nw=2", "-", "500.0", "200.0", "300.0"],
            "{text}"
        );
        assert!(
            text.contains("Persistent workers save 0.30 s per epoch for nw=2"),
            "{text}"
        );
        assert!(
            text.contains("num_workers: 0 workers 4.40 s, 2 workers 2.50 s; no knee"),
            "{text}"
        );
        assert!(
            text.contains("\nRecommendation: synthetic · light · loaderbench\nUse nw=0. "),
            "{text}"
        );
        // One round shows nothing of the noise: nothing beats anything yet, and the
        // verdict says so.
        assert!(
            text.contains(
                "nw=2, nw=2 persistent are not shown slower beyond the noise by more than \
                 the tie margin"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "Verdict: not resolved after 1 round (18.5 s measured): nw=2 persistent looks \
                 99% faster than nw=0, but one round shows nothing"
            ),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("    num_workers: [0],"),
            "the snippet closes the recommendation: {text}"
        );
    }

    /// A sentence per config for a few configs; a table of the same figures for more
    /// (a wide tune's 17 sentences were a wall).
    #[test]
    fn many_savings_are_a_table() {
        let analysed = |workers: &[usize]| {
            let configs = workers.iter().map(|&w| config(w, false)).collect();
            text(&Analysis::of(&each_once(configs, || {
                two_epochs(0.5, 0.1, 11)
            })))
        };
        let few = analysed(&[0, 2, 4]);
        assert!(few.contains("\nPersistent workers save "), "{few}");
        assert!(!few.contains("What persistent workers would save"), "{few}");
        let many = analysed(&[0, 1, 2, 4]);
        assert!(!many.contains("\nPersistent workers save "), "{many}");
        let (_, table) = many
            .split_once("\n\nWhat persistent workers would save\n")
            .unwrap_or_else(|| panic!("{many}"));
        let rows: Vec<&str> = table.lines().take(5).collect();
        assert!(rows[0].starts_with("| config "), "{table}");
        assert!(rows[0].contains("| over 50 epochs |"), "{table}");
        for (row, label) in rows[2..].iter().zip(["nw=1", "nw=2", "nw=4"]) {
            assert!(row.starts_with(&format!("| {label} ")), "{table}");
            assert!(
                row.contains("| its restart cost (an upper bound) |"),
                "{table}"
            );
        }
    }
}
