//! The timeline budget: how many batch records a config keeps in its epochs' timelines,
//! so that a run of many long epochs stays a results file of megabytes. Past the budget
//! an epoch keeps its totals and its first batch; the runner and the PyTorch runtime's
//! session apply it to each epoch as it finishes.

use crate::results::EpochResult;

/// The batch records a config keeps in its epochs' timelines. A record takes about 200
/// bytes of JSON, so a config's timelines stay under about 4 MB however many epochs it
/// runs; past them, an epoch keeps its totals and its first batch.
pub const TIMELINE_BATCHES: usize = 20_000;

/// Keeps one config's timelines within [`TIMELINE_BATCHES`] records, applied to its
/// epochs in order as they finish. Once the budget is spent an epoch keeps only its
/// first batch (whose wait the input-bound analysis takes apart from the rest) and counts
/// the others in [`EpochResult::summarised_batches`].
#[derive(Debug, Default)]
pub struct TimelineBudget {
    kept: usize,
}

impl TimelineBudget {
    pub fn apply(&mut self, epoch: &mut EpochResult) {
        let room = TIMELINE_BATCHES.saturating_sub(self.kept).max(1);
        if epoch.timeline.len() > room {
            epoch.summarised_batches += epoch.timeline.len() - room;
            epoch.timeline.truncate(room);
        }
        self.kept += epoch.timeline.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_config_keeps_whole_timelines_until_its_budget_is_spent() {
        let mut budget = TimelineBudget::default();
        let per_epoch = 3_000;
        let mut epochs: Vec<EpochResult> = (1..=10)
            .map(|number| fixtures::epoch(number, 0.5, 0.01, per_epoch))
            .collect();
        for epoch in &mut epochs {
            budget.apply(epoch);
        }
        let kept: usize = epochs.iter().map(|e| e.timeline.len()).sum();
        assert_eq!(epochs[0].timeline.len(), per_epoch);
        assert_eq!(epochs[6].timeline.len(), TIMELINE_BATCHES - 6 * per_epoch);
        assert_eq!(
            epochs[9].timeline.len(),
            1,
            "past the budget, the first batch"
        );
        assert_eq!(kept, TIMELINE_BATCHES + 3);
        for epoch in &epochs {
            assert_eq!(epoch.timeline.len() + epoch.summarised_batches, per_epoch);
            assert_eq!(epoch.batches, per_epoch, "the totals stay whole");
            assert_eq!(epoch.timeline[0].index, 0);
        }
    }

    #[test]
    fn a_batch_record_takes_about_the_json_the_budget_assumes() {
        let epoch = fixtures::epoch(1, 0.5, 0.012_345_678, 1_000);
        let bytes = serde_json::to_string(&epoch.timeline).unwrap().len();
        let per_record = bytes / 1_000;
        assert!(
            (100..=300).contains(&per_record),
            "{per_record} bytes a record"
        );
    }
}
