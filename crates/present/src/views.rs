//! The views of a run that can be saved as a PNG, named once: three areas of the app's
//! window and each of its charts alone. The app's Export menu lists them and `--view` of
//! `run --png` and `report --png` takes their names, so both offer the same list. Plain
//! names and no drawing: the app (feature `gui`) draws them.

/// One chart of the app, by what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChartId {
    FirstBatch,
    EpochTimes,
    RankSpread,
    Timeline,
    Ledger,
    Scaling,
    Stages,
    Memory,
    Throughput,
    Stall,
    Baseline,
}

impl ChartId {
    /// Every chart, in the order the app draws them.
    pub const ALL: [ChartId; 11] = [
        ChartId::FirstBatch,
        ChartId::EpochTimes,
        ChartId::RankSpread,
        ChartId::Timeline,
        ChartId::Ledger,
        ChartId::Scaling,
        ChartId::Stages,
        ChartId::Memory,
        ChartId::Throughput,
        ChartId::Stall,
        ChartId::Baseline,
    ];

    /// The name `--view` takes and the PNG file's suffix.
    pub fn name(self) -> &'static str {
        match self {
            ChartId::FirstBatch => "first-batch",
            ChartId::EpochTimes => "epoch-times",
            ChartId::RankSpread => "rank-spread",
            ChartId::Timeline => "timeline",
            ChartId::Ledger => "ledger",
            ChartId::Scaling => "scaling",
            ChartId::Stages => "stages",
            ChartId::Memory => "memory",
            ChartId::Throughput => "throughput",
            ChartId::Stall => "stall",
            ChartId::Baseline => "baseline",
        }
    }

    /// How the Export menu names the chart (the start of the chart's own title).
    pub fn title(self) -> &'static str {
        match self {
            ChartId::FirstBatch => "First-batch latency",
            ChartId::EpochTimes => "Epoch time",
            ChartId::RankSpread => "Rank spread",
            ChartId::Timeline => "Wait for each batch",
            ChartId::Ledger => "Start-up ledger",
            ChartId::Scaling => "Scaling",
            ChartId::Stages => "Where the time goes",
            ChartId::Memory => "Memory",
            ChartId::Throughput => "Throughput",
            ChartId::Stall => "Training step",
            ChartId::Baseline => "Against baseline",
        }
    }
}

/// Which part of the window a PNG captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PngArea {
    /// The first-batch and epoch-time plots side by side.
    Plots,
    /// Plots, timeline and results table.
    Results,
    /// The analysis section: recommendation and its charts.
    Analysis,
    /// One chart alone.
    Chart(ChartId),
}

impl PngArea {
    /// Every view: the three areas, then each chart.
    pub fn all() -> impl Iterator<Item = PngArea> {
        [PngArea::Plots, PngArea::Results, PngArea::Analysis]
            .into_iter()
            .chain(ChartId::ALL.map(PngArea::Chart))
    }

    /// The name `--view` takes.
    pub fn name(self) -> &'static str {
        match self {
            PngArea::Plots => "plots",
            PngArea::Results => "results",
            PngArea::Analysis => "analysis",
            PngArea::Chart(chart) => chart.name(),
        }
    }

    /// How the Export menu names the view.
    pub fn title(self) -> &'static str {
        match self {
            PngArea::Plots => "Plots",
            PngArea::Results => "Results view",
            PngArea::Analysis => "Analysis",
            PngArea::Chart(chart) => chart.title(),
        }
    }

    /// The view called `name`, as [`PngArea::name`] writes it.
    pub fn from_name(name: &str) -> Option<PngArea> {
        PngArea::all().find(|area| area.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_its_own_name_that_reads_back() {
        let names: Vec<&str> = PngArea::all().map(PngArea::name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for area in PngArea::all() {
            assert_eq!(PngArea::from_name(area.name()), Some(area));
        }
        assert_eq!(
            PngArea::from_name("stages"),
            Some(PngArea::Chart(ChartId::Stages))
        );
        assert_eq!(PngArea::from_name("nothing"), None);
    }
}
