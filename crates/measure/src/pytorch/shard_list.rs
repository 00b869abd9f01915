//! The request for a `shards` dataset: the preset's pattern expanded by the engine's
//! [`shard_locations`] into the shard list that WebDataset opens (local paths, which must
//! exist and be tars both runtimes read, as [`check_shard_file`] tells from their first
//! bytes, or http(s) URLs, which the engine's index pass checks). With `samples` set, the list is cut the way our engine cuts
//! the dataset (its first samples in shard order): the shards that hold them, each with
//! the number of its samples the run reads, as our engine's view of the dataset says.

use std::sync::Arc;

use super::DatasetRequest;
use loaderbench_engine::dataset::{
    Dataset, DatasetSpec, ShardLocation, check_shard_file, shard_locations,
};
use loaderbench_engine::error::{Error, Result};

/// The webdataset request for `spec`; `dataset` is our engine's view of it, already cut
/// to the run's `samples`, when it was opened.
pub fn shards_request(
    spec: &DatasetSpec,
    samples: Option<usize>,
    dataset: Option<&Arc<dyn Dataset>>,
) -> Result<DatasetRequest> {
    let pattern = spec
        .path
        .as_ref()
        .ok_or_else(|| Error::value("dataset.path: shards need a path pattern"))?;
    let pattern = pattern
        .to_str()
        .ok_or_else(|| Error::file(pattern, "the shard pattern is not valid UTF-8"))?;
    let mut shards = Vec::new();
    for location in shard_locations(pattern, spec.limits.shards)? {
        match location {
            ShardLocation::File(path) if !path.is_file() => {
                return Err(Error::file(path, "no such shard"));
            }
            ShardLocation::File(path) => {
                check_shard_file(&path)?;
                shards.push(path.display().to_string());
            }
            location => shards.push(location.target()?),
        }
    }
    let ranges = samples.and(dataset).and_then(|dataset| dataset.shards());
    let samples_per_shard = ranges.map(|ranges| {
        shards.truncate(ranges.len());
        ranges.iter().map(|range| range.len()).collect()
    });
    Ok(DatasetRequest::Shards {
        shards,
        channels: spec.channels,
        image_size: spec.image_size,
        shuffle_buffer: spec.shuffle_buffer,
        samples_per_shard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_reads_the_image_formats_our_engine_reads_in_shards() {
        let (_, script) = super::super::folder::SIBLINGS
            .iter()
            .find(|(name, _)| *name == "pytorch_shards.py")
            .expect("the shards script");
        let (_, rest) = script
            .split_once("\nIMAGE_EXTENSIONS = (")
            .expect("the script's IMAGE_EXTENSIONS");
        let listed: Vec<&str> = rest
            .split_once(')')
            .expect("a closed tuple")
            .0
            .split(',')
            .map(|name| name.trim().trim_matches('"'))
            .collect();
        assert_eq!(listed, loaderbench_engine::dataset::IMAGE_EXTENSIONS);
    }

    fn spec(path: &str) -> DatasetSpec {
        DatasetSpec {
            kind: loaderbench_engine::dataset::DatasetKind::Shards,
            path: Some(path.into()),
            channels: 3,
            image_size: [32, 32],
            ..DatasetSpec::default()
        }
    }

    #[test]
    fn urls_are_expanded_in_order_and_kept() {
        let request = shards_request(&spec("http://127.0.0.1:9/s-{0..2}.tar"), None, None).unwrap();
        let DatasetRequest::Shards {
            shards,
            samples_per_shard,
            shuffle_buffer,
            ..
        } = request
        else {
            panic!("not a shards request: {request:?}");
        };
        let urls = ["0", "1", "2"].map(|n| format!("http://127.0.0.1:9/s-{n}.tar"));
        assert_eq!(shards, urls);
        assert_eq!((samples_per_shard, shuffle_buffer), (None, 1000));
    }

    #[test]
    fn a_missing_local_shard_is_named_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s-0.tar"), b"").unwrap();
        let pattern = format!("{}/s-{{0..1}}.tar", dir.path().display());
        let err = shards_request(&spec(&pattern), None, None).unwrap_err();
        assert!(err.is_bad_input());
        let missing = dir.path().join("s-1.tar");
        assert_eq!(
            err.to_string(),
            format!("{}: no such shard", missing.display())
        );
    }
}
