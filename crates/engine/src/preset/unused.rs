//! Which of a preset's fields its plan leaves unused, and why: pipeline, normalize and
//! transform_at beside a python dataset (its own code transforms the samples);
//! transform_at without our engine; the dataset's and the batches' transfer without our
//! engine's worker processes; the start method without the PyTorch runtime; the cache
//! for a dataset without files of its own (synthetic, or a python dataset's, which only
//! its code knows). The app greys such a field out and says why; a plan warns of a value
//! given to one, which would otherwise be dropped in silence (a cold config of such a
//! dataset is measured, warned of and marked `stayed warm` by the run itself). It errs
//! towards "may matter": a field is unused only where no config of the grid or
//! `extra_configs` could use it.

use super::{Preset, Runtime, WorkerKind};
use crate::dataset::DatasetKind;

/// Why a python dataset leaves our pipelines out.
pub const OWN_TRANSFORMS: &str = "a python dataset transforms its samples in its own code";

/// Why a python dataset's files are neither loaded into the page cache nor evicted.
pub const OWN_FILES: &str = "a python dataset's files are its own code's to read, unknown to \
                             loaderbench";

/// What decides which fields of one preset are unused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnusedFields {
    python_dataset: bool,
    synthetic_dataset: bool,
    our_engine: bool,
    our_worker_processes: bool,
    pytorch: bool,
}

impl UnusedFields {
    /// Those of `preset`, over the runtimes and worker kinds of its grid and its extra
    /// configs.
    pub fn of(preset: &Preset) -> UnusedFields {
        let extras = &preset.extra_configs;
        let runtimes: Vec<Runtime> = (preset.runtime.iter().copied())
            .chain(extras.iter().filter_map(|point| point.runtime))
            .collect();
        let kinds: Vec<WorkerKind> = (preset.worker_kind.iter().copied())
            .chain(extras.iter().filter_map(|point| point.worker_kind))
            .collect();
        let our_engine = runtimes.contains(&Runtime::Loaderbench);
        UnusedFields {
            python_dataset: preset.dataset.kind == DatasetKind::Python,
            synthetic_dataset: preset.dataset.kind == DatasetKind::Synthetic,
            our_engine,
            our_worker_processes: our_engine
                && kinds
                    .iter()
                    .any(|kind| matches!(kind, WorkerKind::Fork | WorkerKind::Spawn)),
            pytorch: runtimes.contains(&Runtime::Pytorch),
        }
    }

    /// Why `field` (as `--set` and errors name it) does nothing in this preset's plan;
    /// `None` where it may matter.
    pub fn why(&self, field: &str) -> Option<&'static str> {
        match field {
            "pipeline" | "normalize" | "transform_at" if self.python_dataset => {
                Some(OWN_TRANSFORMS)
            }
            "transform_at" if !self.our_engine => Some(
                "only loaderbench's engine chooses where the transforms run; the other \
                 runtimes transform each sample",
            ),
            "dataset_transfer" | "batch_transfer" if !self.our_worker_processes => Some(
                "only loaderbench's own worker processes (worker kind fork or spawn) pass \
                 the dataset and the batches",
            ),
            "start_method" if !self.pytorch => {
                Some("only the pytorch runtime starts its workers by a start method")
            }
            "cache" if self.synthetic_dataset => {
                Some("the synthetic dataset is made in memory: it has no files to evict")
            }
            "cache" if self.python_dataset => Some(OWN_FILES),
            _ => None,
        }
    }

    /// A warning for each of these fields that `preset` gives a value other than its
    /// default and its plan leaves unused.
    pub fn warnings(&self, preset: &Preset) -> Vec<String> {
        let defaults = Preset::default();
        let given = [
            ("normalize", preset.normalize != defaults.normalize),
            ("transform_at", preset.transform_at != defaults.transform_at),
            (
                "dataset_transfer",
                preset.dataset_transfer != defaults.dataset_transfer,
            ),
            (
                "batch_transfer",
                preset.batch_transfer != defaults.batch_transfer,
            ),
            ("start_method", preset.start_method != defaults.start_method),
        ];
        given
            .into_iter()
            .filter(|(_, given)| *given)
            .filter_map(|(field, _)| {
                let why = self.why(field)?;
                Some(format!("{field} does nothing in this plan: {why}"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::{ConfigPoint, DatasetTransfer};

    fn unused(preset: &Preset) -> Vec<&'static str> {
        let fields = [
            "pipeline",
            "normalize",
            "transform_at",
            "dataset_transfer",
            "batch_transfer",
            "start_method",
            "cache",
            "num_workers",
        ];
        let of = UnusedFields::of(preset);
        fields.into_iter().filter(|f| of.why(f).is_some()).collect()
    }

    #[test]
    fn a_field_is_unused_only_where_no_config_could_use_it() {
        // The default: our engine's thread workers.
        let plain = Preset::default();
        assert_eq!(
            unused(&plain),
            [
                "dataset_transfer",
                "batch_transfer",
                "start_method",
                "cache"
            ]
        );
        let processes = Preset {
            worker_kind: vec![WorkerKind::Auto, WorkerKind::Spawn],
            runtime: vec![Runtime::Loaderbench, Runtime::Pytorch],
            ..Preset::default()
        };
        assert_eq!(unused(&processes), ["cache"], "the synthetic dataset's");
        let pytorch = Preset {
            runtime: vec![Runtime::Pytorch],
            ..Preset::default()
        };
        assert_eq!(
            unused(&pytorch),
            [
                "transform_at",
                "dataset_transfer",
                "batch_transfer",
                "cache"
            ]
        );
        let mut files = pytorch.clone();
        files.dataset.kind = DatasetKind::ImageFolder;
        assert_eq!(
            unused(&files),
            ["transform_at", "dataset_transfer", "batch_transfer"]
        );
        let mut python = pytorch.clone();
        python.dataset.kind = DatasetKind::Python;
        assert_eq!(
            unused(&python),
            [
                "pipeline",
                "normalize",
                "transform_at",
                "dataset_transfer",
                "batch_transfer",
                "cache"
            ]
        );
        assert_eq!(
            UnusedFields::of(&python).why("normalize"),
            Some(OWN_TRANSFORMS)
        );
        // An extra config on PyTorch uses the grid's start method, one of forked engine
        // workers its transfers.
        let extras = Preset {
            extra_configs: vec![
                ConfigPoint {
                    runtime: Some(Runtime::Pytorch),
                    ..ConfigPoint::default()
                },
                ConfigPoint {
                    worker_kind: Some(WorkerKind::Fork),
                    ..ConfigPoint::default()
                },
            ],
            ..Preset::default()
        };
        assert_eq!(unused(&extras), ["cache"]);
    }

    #[test]
    fn a_value_given_to_an_unused_field_is_warned_of() {
        let mut python = Preset {
            runtime: vec![Runtime::Pytorch],
            ..Preset::default()
        };
        python.dataset.kind = DatasetKind::Python;
        let warnings = |preset: &Preset| UnusedFields::of(preset).warnings(preset);
        assert_eq!(
            warnings(&python),
            [] as [String; 0],
            "defaults are not given"
        );
        python.normalize.mean = vec![0.5];
        assert_eq!(
            warnings(&python),
            [
                "normalize does nothing in this plan: a python dataset transforms its samples \
              in its own code"
            ]
        );
        let threads = Preset {
            dataset_transfer: vec![DatasetTransfer::Reopen, DatasetTransfer::Copy],
            ..Preset::default()
        };
        assert_eq!(
            warnings(&threads),
            [
                "dataset_transfer does nothing in this plan: only loaderbench's own worker \
              processes (worker kind fork or spawn) pass the dataset and the batches"
            ]
        );
        let forked = Preset {
            worker_kind: vec![WorkerKind::Fork],
            ..threads
        };
        assert_eq!(warnings(&forked), [] as [String; 0]);
    }
}
