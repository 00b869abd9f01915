//! The page cache in the runner, before each epoch (after the front end's gate, before
//! the meter's reading and the clock). For `cache: cold` this process releases its own
//! mapped pages of the dataset and evicts the dataset's files from the page cache
//! ([`page_cache::evict`]), checking that they left; a config whose files stay (on
//! tmpfs, held mapped by another process, a dataset with no files) is marked
//! `stayed_warm`. For `cache: warm` it reads the dataset's local files into the page
//! cache where they are not all there ([`page_cache::load`]), checking that they came
//! in, so that a warm epoch never finds them as the machine left them (on these VMs the
//! kernel reclaims freshly written files); a config whose files cannot all be held
//! (more than the memory available, or reclaimed as they came in) is marked
//! `partly_cold`. Either way the run says why in one line naming the file. A warm
//! config of files loaderbench does not know (a Python dataset's, a server's) or of none
//! (synthetic) has nothing to load.

use std::sync::Arc;

use loaderbench_engine::dataset::Dataset;
use loaderbench_engine::error::Result;
use loaderbench_engine::page_cache;
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::{Cache, OWN_FILES};

use super::Run;
use crate::results::ConfigResult;

/// One config's page-cache state across its epochs.
pub(super) struct EpochCache {
    cache: Cache,
    /// The dataset our engine opened; `None` for a user's Python dataset.
    dataset: Option<Arc<dyn Dataset>>,
    stayed_warm: Option<String>,
    partly_cold: Option<String>,
}

impl EpochCache {
    pub(super) fn new(config: &Config, dataset: Option<&Arc<dyn Dataset>>) -> EpochCache {
        EpochCache {
            cache: config.cache,
            dataset: dataset.cloned(),
            stayed_warm: None,
            partly_cold: None,
        }
    }

    /// Marks the config's result where its epochs were not all as cold or as warm as it
    /// asked.
    pub(super) fn mark(self, result: &mut ConfigResult) {
        result.stayed_warm = self.stayed_warm;
        result.partly_cold = self.partly_cold;
    }

    /// Makes the page cache what the config asks for; the line that says why it could
    /// not, if it could not.
    fn prepare(&self) -> Result<Option<String>> {
        match self.cache {
            Cache::Cold => self.evict(),
            Cache::Warm => self.load(),
        }
    }

    /// Evicts the dataset's files; the line that says why some stayed, if they did.
    fn evict(&self) -> Result<Option<String>> {
        let Some(dataset) = &self.dataset else {
            return Ok(Some(format!("{OWN_FILES}, so none were evicted")));
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

    /// Loads the dataset's local files; the line that says why they are not all in, if
    /// they are not.
    fn load(&self) -> Result<Option<String>> {
        let Some(dataset) = self.dataset.as_ref().filter(|_| page_cache::SUPPORTED) else {
            return Ok(None);
        };
        let not_loaded = page_cache::load(&dataset.files())?;
        Ok(not_loaded.map(|why| why.to_string()))
    }
}

impl Run {
    /// Makes the page cache what a config asks for before an epoch; the first time it
    /// cannot, marks the config and says why (once per run for the same line).
    pub(super) fn prepare_page_cache(&self, index: usize, cache: &mut EpochCache) -> Result<()> {
        let Some(why) = cache.prepare()? else {
            return Ok(());
        };
        let (mark, name) = match cache.cache {
            Cache::Cold => (&mut cache.stayed_warm, "stayed warm"),
            Cache::Warm => (&mut cache.partly_cold, "partly cold"),
        };
        if mark.is_none() {
            let asked = cache.cache.name();
            self.warn(
                Some(index),
                format!("cache: {asked}: {why}; such configs are marked `{name}`"),
            );
            *mark = Some(why);
        }
        Ok(())
    }
}
