//! `cache: cold` in the runner: before each epoch of a cold config (after the front
//! end's gate, before the meter's reading and the clock), this process releases its own
//! mapped pages of the dataset and evicts the dataset's files from the page cache
//! ([`page_cache`]), checking that they left. A config whose files stay (on tmpfs, held
//! mapped by another process, a dataset with no files) is marked `stayed_warm`, and the
//! run says why in one line naming the file.

use std::sync::Arc;

use loaderbench_engine::dataset::Dataset;
use loaderbench_engine::error::Result;
use loaderbench_engine::page_cache;
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::Cache;

use super::Run;

/// One config's page-cache state across its epochs.
pub(super) struct EpochCache {
    cold: bool,
    /// The dataset our engine opened; `None` for a user's Python dataset.
    dataset: Option<Arc<dyn Dataset>>,
    stayed_warm: Option<String>,
}

impl EpochCache {
    pub(super) fn new(config: &Config, dataset: Option<&Arc<dyn Dataset>>) -> EpochCache {
        EpochCache {
            cold: config.cache == Cache::Cold,
            dataset: dataset.cloned(),
            stayed_warm: None,
        }
    }

    /// Why the config's epochs were not all cold, if they were not.
    pub(super) fn stayed_warm(self) -> Option<String> {
        self.stayed_warm
    }

    /// For a cold config, evicts the dataset's files; the line that says why some
    /// stayed, if they did.
    fn evict(&self) -> Result<Option<String>> {
        if !self.cold {
            return Ok(None);
        }
        let Some(dataset) = &self.dataset else {
            return Ok(Some(
                "a python dataset's files are its own code's to read, unknown to \
                 loaderbench, so none were evicted"
                    .to_owned(),
            ));
        };
        dataset.release_mapped_pages()?;
        let files = dataset.files();
        if files.is_empty() {
            return Ok(Some(format!(
                "{}: no local files to evict: the samples are made in memory, or come over \
                 the network, where the server's cache is its own",
                dataset.describe()
            )));
        }
        let stayed = page_cache::evict(&files)?;
        Ok(stayed.first().map(|first| {
            let others = match stayed.len() - 1 {
                0 => String::new(),
                1 => " and 1 other file".to_owned(),
                n => format!(" and {n} other files"),
            };
            format!("{}{others}: {}", first.path.display(), first.why)
        }))
    }
}

impl Run {
    /// Evicts a cold config's files before an epoch; the first time its files stay,
    /// marks the config and says why (once per run for the same line).
    pub(super) fn evict_if_cold(&self, index: usize, cache: &mut EpochCache) -> Result<()> {
        let Some(why) = cache.evict()? else {
            return Ok(());
        };
        if cache.stayed_warm.is_none() {
            self.warn(
                Some(index),
                format!("cache: cold: {why}; such configs are marked `stayed warm`"),
            );
            cache.stayed_warm = Some(why);
        }
        Ok(())
    }
}
