//! `cache: cold`: a dataset's files dropped from the page cache, and checked with
//! `mincore` to have left (see [the module](super)).

use std::fmt;
use std::path::{Path, PathBuf};

use super::{EVICT, Residency, failed, open, platform, residency_of};
use crate::error::Result;

/// A file whose pages stayed in memory after eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stayed {
    pub path: PathBuf,
    pub why: Why,
}

/// Why a file's pages stayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The file system keeps files in memory (`tmpfs`, `ramfs`): there is no storage
    /// to read them from.
    InMemory(&'static str),
    /// `resident` of its `pages` stayed after eviction: a process holds them mapped.
    Held { resident: usize, pages: usize },
    /// The kernel shows a file's page cache to `mincore` only for its owner or a user
    /// who may write it, so nothing can be checked.
    Unseen,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::InMemory(fs) => write!(f, "on {fs}, whose pages cannot leave memory"),
            Why::Held { resident, pages } => write!(
                f,
                "{resident} of {pages} pages stayed in the page cache after eviction \
                 (another process holds them mapped, as persistent worker processes do)"
            ),
            Why::Unseen => write!(
                f,
                "mincore cannot see this file's page cache (neither owned by nor writable \
                 for this user), so eviction cannot be checked"
            ),
        }
    }
}

/// Evicts every file of `paths` from the page cache and checks that its pages left;
/// returns the files whose pages stayed, in `paths`' order. A file that cannot be
/// opened fails the run: a dataset's files do not vanish during a benchmark.
pub fn evict(paths: &[PathBuf]) -> Result<Vec<Stayed>> {
    let mut stayed = Vec::new();
    for path in paths {
        if let Some(why) = evict_file(path)? {
            stayed.push(Stayed {
                path: path.clone(),
                why,
            });
        }
    }
    Ok(stayed)
}

/// Evicts one file; `Some(why)` when its pages stayed.
fn evict_file(path: &Path) -> Result<Option<Why>> {
    let file = open(path, EVICT)?;
    if let Some(fs) =
        platform::memory_file_system(&file).map_err(|e| failed(path, "cannot stat", EVICT, &e))?
    {
        return Ok(Some(Why::InMemory(fs)));
    }
    platform::drop_pages(&file)
        .map_err(|err| failed(path, "cannot drop the pages", EVICT, &err))?;
    if !platform::cache_visible(path, &file) {
        return Ok(Some(Why::Unseen));
    }
    let Residency { resident, pages } = residency_of(path, &file, EVICT)?;
    Ok((resident > 0).then_some(Why::Held { resident, pages }))
}
