//! The recommendation: which measured config to train with on this machine, and why.
//! Configs are ranked by the time they project for the planned epochs (the first epoch,
//! then every later one at its typical time). Among those within the noise of the
//! fastest (its spread, at least [`NEAR_SHARE`]) the one with the fewest workers wins:
//! workers cost memory and cores that buy nothing measurable.

use serde::{Deserialize, Serialize};

use super::input::InputBound;
use super::{ConfigEstimate, ConfigRuns, duration, mib};

/// Configs within this share of the fastest projected time count as equally fast.
pub const NEAR_SHARE: f64 = 0.05;

/// The config to use and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub config: usize,
    pub label: String,
    /// The planned epochs' projected time.
    pub projected_s: f64,
    /// A typical epoch's median time.
    pub epoch_s: f64,
    pub first_epoch_s: f64,
    /// What it is compared with: no workers where measured, else the slowest config.
    pub baseline_config: usize,
    pub baseline_label: String,
    pub baseline_epoch_s: f64,
    /// Baseline projected time over this config's.
    pub speedup: f64,
    pub peak_rss_bytes: Option<u64>,
    /// Peak RSS beyond the baseline's.
    pub extra_rss_bytes: Option<i64>,
    /// Configs as fast within the noise that were passed over for using more workers.
    pub equally_fast: Vec<String>,
    /// One short paragraph with the numbers.
    pub text: String,
}

/// The recommendation, or `None` when no config finished an epoch.
pub fn recommend(
    configs: &[ConfigRuns<'_>],
    estimates: &[ConfigEstimate],
    input_bound: &[InputBound],
    planned_epochs: usize,
) -> Option<Recommendation> {
    let projected = |e: &ConfigEstimate| {
        e.first_epoch_s.median + planned_epochs.saturating_sub(1) as f64 * e.epoch_s.median
    };
    let workers = |e: &ConfigEstimate| {
        configs
            .iter()
            .find(|c| c.index == e.config)
            .map_or(usize::MAX, |c| c.config.num_workers)
    };
    let fastest = estimates
        .iter()
        .min_by(|a, b| projected(a).total_cmp(&projected(b)))?;
    let tolerance = NEAR_SHARE.max(fastest.epoch_s.spread);
    let near: Vec<&ConfigEstimate> = estimates
        .iter()
        .filter(|e| projected(e) <= projected(fastest) * (1.0 + tolerance))
        .collect();
    let chosen = *near.iter().min_by(|a, b| {
        workers(a)
            .cmp(&workers(b))
            .then(projected(a).total_cmp(&projected(b)))
    })?;
    let baseline = configs
        .iter()
        .find(|c| c.config.num_workers == 0 && !c.config.pin_memory)
        .and_then(|c| estimates.iter().find(|e| e.config == c.index))
        .or_else(|| {
            estimates
                .iter()
                .max_by(|a, b| projected(a).total_cmp(&projected(b)))
        })?;
    let equally_fast: Vec<String> = near
        .iter()
        .filter(|e| e.config != chosen.config && workers(e) > workers(chosen))
        .map(|e| e.label.clone())
        .collect();
    let extra_rss_bytes = chosen
        .peak_rss_bytes
        .zip(baseline.peak_rss_bytes)
        .map(|(own, base)| own as i64 - base as i64);
    let mut recommendation = Recommendation {
        config: chosen.config,
        label: chosen.label.clone(),
        projected_s: projected(chosen),
        epoch_s: chosen.epoch_s.median,
        first_epoch_s: chosen.first_epoch_s.median,
        baseline_config: baseline.config,
        baseline_label: baseline.label.clone(),
        baseline_epoch_s: baseline.epoch_s.median,
        speedup: projected(baseline) / projected(chosen),
        peak_rss_bytes: chosen.peak_rss_bytes,
        extra_rss_bytes,
        equally_fast,
        text: String::new(),
    };
    let stall = input_bound.iter().find(|i| i.config == chosen.config);
    recommendation.text = paragraph(&recommendation, planned_epochs, tolerance, stall);
    Some(recommendation)
}

fn paragraph(
    r: &Recommendation,
    planned_epochs: usize,
    tolerance: f64,
    stall: Option<&InputBound>,
) -> String {
    let mut text = format!(
        "Use {}. Over {planned_epochs} epochs it projects to {}: {:.2} s per epoch after a \
         first epoch of {:.2} s",
        r.label,
        duration(r.projected_s),
        r.epoch_s,
        r.first_epoch_s
    );
    if r.config == r.baseline_config {
        text.push_str(", and no config with workers was faster beyond the noise.");
    } else {
        text.push_str(&format!(
            ", {:.1}× as fast as {} ({:.2} s per epoch).",
            r.speedup, r.baseline_label, r.baseline_epoch_s
        ));
    }
    if !r.equally_fast.is_empty() {
        let (is, uses) = if r.equally_fast.len() == 1 {
            ("is", "uses")
        } else {
            ("are", "use")
        };
        text.push_str(&format!(
            " {} {is} within {:.0}% of it but {uses} more workers.",
            r.equally_fast.join(", "),
            tolerance * 100.0
        ));
    }
    if let Some(peak) = r.peak_rss_bytes {
        text.push_str(&format!(" It peaks at {} of memory", mib(peak)));
        match r.extra_rss_bytes {
            Some(extra) if r.config != r.baseline_config => text.push_str(&format!(
                " ({}{} against {}).",
                if extra >= 0 { "+" } else { "-" },
                mib(extra.unsigned_abs()),
                r.baseline_label
            )),
            _ => text.push('.'),
        }
    }
    if let Some(stall) = stall {
        text.push_str(&format!(" With the training step, {}.", stall.verdict));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use super::super::fixtures::{config, epoch, result, run};
    use crate::results::ConfigResult;

    fn measured(
        index: usize,
        workers: usize,
        persistent: bool,
        first: f64,
        batch: f64,
    ) -> ConfigResult {
        let mut r = run(
            index,
            config(workers, persistent),
            vec![
                epoch(1, first, batch, 11),
                epoch(2, if persistent { batch } else { first }, batch, 11),
            ],
        );
        r.peak_rss_bytes = Some((200 + 50 * workers as u64) << 20);
        r
    }

    #[test]
    fn heavy_pipeline_takes_the_fastest_workers() {
        // Workers cut a 0.4 s batch to 0.1 s; persistent ones also skip the restart.
        let configs = vec![
            config(0, false),
            config(2, false),
            config(4, false),
            config(4, true),
        ];
        let results = vec![
            measured(0, 0, false, 0.4, 0.4),
            measured(1, 2, false, 0.5, 0.2),
            measured(2, 4, false, 0.6, 0.1),
            measured(3, 4, true, 0.6, 0.1),
        ];
        let r = Analysis::of(&result(configs, results))
            .recommendation
            .unwrap();
        assert_eq!(r.label, "nw=4 persistent");
        assert_eq!(r.baseline_label, "nw=0");
        // nw=0: 4.4 s an epoch; nw=4 persistent: 1.1 s after a 1.6 s first epoch.
        assert!((r.epoch_s - 1.1).abs() < 1e-9);
        assert!((r.projected_s - (1.6 + 49.0 * 1.1)).abs() < 1e-9);
        assert!(
            r.text
                .starts_with("Use nw=4 persistent. Over 50 epochs it projects to 55.5 s"),
            "{}",
            r.text
        );
        assert!(
            r.text.contains("4.0× as fast as nw=0 (4.40 s per epoch)"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("peaks at 400.0 MiB of memory (+200.0 MiB against nw=0)"),
            "{}",
            r.text
        );
    }

    #[test]
    fn light_pipeline_where_workers_do_not_pay_keeps_no_workers() {
        // Every config runs at about 0.1 s a batch; workers only add start-up.
        let configs = vec![config(0, false), config(2, false), config(4, true)];
        let results = vec![
            measured(0, 0, false, 0.1, 0.1),
            measured(1, 2, false, 0.3, 0.1),
            measured(2, 4, true, 0.3, 0.098),
        ];
        let r = Analysis::of(&result(configs, results))
            .recommendation
            .unwrap();
        assert_eq!(r.label, "nw=0");
        assert!(
            r.text
                .contains("no config with workers was faster beyond the noise"),
            "{}",
            r.text
        );
        assert_eq!(r.equally_fast, vec!["nw=4 persistent".to_owned()]);
        assert!(
            r.text
                .contains("nw=4 persistent is within 5% of it but uses more workers"),
            "{}",
            r.text
        );
    }

    #[test]
    fn equally_fast_configs_resolve_to_fewer_workers() {
        let configs = vec![config(0, false), config(4, true), config(8, true)];
        let results = vec![
            measured(0, 0, false, 0.4, 0.4),
            measured(1, 4, true, 0.5, 0.101),
            measured(2, 8, true, 0.5, 0.1),
        ];
        let r = Analysis::of(&result(configs, results))
            .recommendation
            .unwrap();
        assert_eq!(r.label, "nw=4 persistent");
        assert_eq!(r.equally_fast, vec!["nw=8 persistent".to_owned()]);
    }
}
