//! What a tune did, as plain serde data saved with its results (in the JSON and the
//! journal) so that `report` and the app show it like any run: the budget and what was
//! used of it, why the search stopped, and for every config of the search space what the
//! model predicted, what was measured over how many rounds, and its fate: in the best
//! set, eliminated (in which round, and why), or never measured (and why).

use serde::{Deserialize, Serialize};

/// A tune's trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneTrail {
    /// The wall-clock budget, in seconds.
    pub budget_s: f64,
    /// The seconds the search used.
    pub used_s: f64,
    pub stop: TuneStop,
    /// The configs measured first, to fit the model.
    pub anchors: Vec<usize>,
    /// Rounds of measurement, the anchors' included.
    pub rounds: usize,
    /// One per config of the search space, in grid order.
    pub configs: Vec<TunedConfig>,
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneStop {
    /// The answer was settled: no config outside the best set can still beat it beyond
    /// the noise, and every member of the set has the rounds to say so.
    Settled,
    /// The next measurement did not fit in what was left of the budget.
    Budget,
    /// The user stopped it.
    Cancelled,
    /// The run failed; what was measured before is kept.
    Failed,
}

/// One config of the search space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedConfig {
    pub config: usize,
    /// The model's projected time for the planned epochs; `None` for an anchor, or where
    /// the model had nothing to go on.
    pub predicted_s: Option<f64>,
    /// The median projected time over the rounds that measured it.
    pub measured_s: Option<f64>,
    pub rounds: usize,
    pub fate: Fate,
}

impl TunedConfig {
    /// The prediction's error against the measurement: (predicted − measured) / measured.
    pub fn prediction_error(&self) -> Option<f64> {
        let (predicted, measured) = (self.predicted_s?, self.measured_s?);
        (measured > 0.0).then(|| (predicted - measured) / measured)
    }
}

/// What became of a config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fate")]
pub enum Fate {
    /// In the best set when the search stopped.
    Best,
    /// Measured and dropped after round `round`.
    Eliminated { round: usize, reason: String },
    /// Never measured.
    NotMeasured { reason: String },
}

/// Why a config the search never came to is not measured.
const STOPPED_FIRST: &str = "the search stopped first";

impl Fate {
    /// A config still a candidate, never measured, when the search stopped.
    pub fn stopped_first() -> Fate {
        Fate::NotMeasured {
            reason: STOPPED_FIRST.to_owned(),
        }
    }

    /// True for [`Fate::stopped_first`]: a config that the search's end, not its rules,
    /// left unmeasured.
    pub fn is_stopped_first(&self) -> bool {
        matches!(self, Fate::NotMeasured { reason } if reason == STOPPED_FIRST)
    }

    /// `best`, `out in round 2: …`, `not measured: …`.
    pub fn describe(&self) -> String {
        match self {
            Fate::Best => "best set".to_owned(),
            Fate::Eliminated { round, reason } => format!("out after round {round}: {reason}"),
            Fate::NotMeasured { reason } => format!("not measured: {reason}"),
        }
    }
}
