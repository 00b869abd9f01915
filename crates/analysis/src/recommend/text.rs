//! The recommendation's paragraph: the config to use and what it projects to over the
//! planned epochs, against what and by how much, what else was as fast (the best set)
//! and why this one was picked (the tie rule), whether the run
//! is input-bound; the verdict's sentence closes it (how far the measurements carry).

use super::super::input::InputBound;
use super::super::{duration, mib};
use super::tie::{Question, TIE_RULE};
use super::{Candidate, Outcome, Recommendation};
use loaderbench_engine::seconds;

pub(super) fn paragraph(
    r: &Recommendation,
    planned_epochs: usize,
    chosen: &Candidate<'_>,
    baseline: &Candidate<'_>,
    question: &Question<'_, '_>,
    stall: Option<&InputBound>,
) -> String {
    let projected = chosen.projected_s;
    let mut text = format!(
        "Use {}. Over {planned_epochs} epochs it projects to {}",
        chosen.label,
        duration(projected.median),
    );
    if projected.high > projected.low {
        text.push_str(&format!(
            " (95% interval {}–{})",
            duration(projected.low),
            duration(projected.high)
        ));
    }
    text.push_str(&format!(
        ": {} s per epoch after a first epoch of {} s",
        seconds(chosen.epoch_s().unwrap_or(f64::NAN)),
        seconds(chosen.first_epoch_s().unwrap_or(f64::NAN))
    ));
    if let Some(window) = chosen.window_batches() {
        text.push_str(&format!(
            " (epochs projected from windows of {window} batches)"
        ));
    }
    let candidates = question.candidates;
    let beyond = "beyond the noise";
    match r.outcome {
        Outcome::Faster => {
            text.push_str(&format!(
                ", {:.1}× as fast as {} ({} s per epoch)",
                r.speedup.unwrap_or(f64::NAN),
                baseline.label,
                seconds(baseline.epoch_s().unwrap_or(f64::NAN))
            ));
            // The tie rule may pick a config of the best set that is not the one that
            // put the baseline out of it: name the one that did.
            if question.beats(chosen, baseline) {
                text.push_str(&format!(" {beyond}."));
            } else if let Some(b) = candidates.iter().find(|c| question.beats(c, baseline)) {
                text.push_str(&format!(", which {} beats {beyond}.", b.label));
            } else {
                text.push('.');
            }
        }
        // One round measures no noise (nor do rounds in which no two configs met), so
        // nothing can be faster beyond it: said as that, not as if the other configs had
        // been found no faster.
        Outcome::NoneFaster | Outcome::Undecided if !question.noise.known() => {
            text.push_str(
                "; what was measured shows nothing of the noise, so no config can be shown \
                 faster beyond it.",
            );
        }
        Outcome::NoneFaster | Outcome::Undecided => {
            let more = if chosen.config.num_workers == 0 {
                ""
            } else {
                " more"
            };
            text.push_str(&format!(
                ", and no config with{more} workers was faster {beyond}."
            ));
        }
    }
    // The rest of the best set: none is beaten (slower beyond the noise, by more than
    // the tie margin as measured), which is not to say it ties (the verdict says how far
    // each comparison is open).
    if !r.equally_fast.is_empty() {
        let is = if r.equally_fast.len() == 1 {
            "is"
        } else {
            "are"
        };
        text.push_str(&format!(
            " {} {is} not shown slower beyond the noise by more than the tie margin; {} is \
             picked by the tie rule ({TIE_RULE}).",
            r.equally_fast.join(", "),
            chosen.label,
        ));
    }
    let folded: Vec<String> = candidates
        .iter()
        .filter(|c| !c.folded.is_empty())
        .map(|c| format!("{} as {}", c.folded.join(", "), c.label))
        .collect();
    if !folded.is_empty() {
        text.push_str(&format!(
            " pin_memory had no effect (no CUDA), so these count as one config: {}.",
            folded.join("; ")
        ));
    }
    let set_aside: Vec<String> = candidates
        .iter()
        .filter(|c| c.set_aside > 0)
        .map(|c| {
            format!(
                "{} ({} of {})",
                c.label,
                c.set_aside,
                c.set_aside + c.runs.len()
            )
        })
        .collect();
    if !set_aside.is_empty() {
        text.push_str(&format!(
            " Set aside as disturbed by other load: {}.",
            set_aside.join(", ")
        ));
    }
    if let Some(peak) = chosen.memory_bytes() {
        text.push_str(&format!(" It peaks at {} of memory", mib(peak)));
        match baseline.memory_bytes() {
            Some(base) if chosen.index != baseline.index => {
                let extra = peak as i64 - base as i64;
                text.push_str(&format!(
                    " ({}{} against {}).",
                    if extra >= 0 { "+" } else { "-" },
                    mib(extra.unsigned_abs()),
                    baseline.label
                ));
            }
            _ => text.push('.'),
        }
    }
    if let Some(stall) = stall {
        text.push_str(&format!(" With the training step, {}.", stall.verdict));
    }
    text.push_str(&format!(" Verdict: {}.", r.verdict.text));
    text
}
