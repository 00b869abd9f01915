//! `cache: warm`: a dataset's files read into the page cache, and checked with
//! `mincore` to be there (see [the module](super)).

use std::fmt;
use std::io::Read;
use std::path::PathBuf;

use super::{LOAD, Residency, failed, open, platform, residency_of};
use crate::error::Result;

/// Why a warm config's files are not all in the page cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotLoaded {
    /// The files' pages missing from the page cache, `missing_bytes` of them, are more
    /// than the memory available (the kernel's `MemAvailable`) holds: reading them would
    /// push out as much as it brought in, so none were read.
    TooLarge {
        missing_bytes: u64,
        available_bytes: u64,
    },
    /// Read whole, `path` still lacked `missing` of its `pages`, and `others` more files
    /// lacked some: the kernel reclaimed them for other memory as they came in.
    Reclaimed {
        path: PathBuf,
        missing: usize,
        pages: usize,
        others: usize,
    },
}

impl fmt::Display for NotLoaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let amount = |bytes: u64| match bytes as f64 {
            b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
            b => format!("{:.1} MB", b / 1e6),
        };
        match self {
            NotLoaded::TooLarge {
                missing_bytes,
                available_bytes,
            } => write!(
                f,
                "{} of the dataset's files are not in the page cache, more than the {} of \
                 memory available: they cannot all be held there",
                amount(*missing_bytes),
                amount(*available_bytes)
            ),
            NotLoaded::Reclaimed {
                path,
                missing,
                pages,
                others,
            } => {
                write!(f, "{}", path.display())?;
                match others {
                    0 => {}
                    1 => write!(f, " and 1 other file")?,
                    n => write!(f, " and {n} other files")?,
                }
                write!(
                    f,
                    ": {missing} of {pages} pages were not in the page cache after it was \
                     read (the kernel reclaimed them for other memory)"
                )
            }
        }
    }
}

/// Reads into the page cache every file of `paths` that `mincore` shows is not all
/// there, then checks with `mincore` that it is: the mirror of [`evict`]. A file whose
/// cache `mincore` may not see ([`Why::Unseen`]) is read whole and cannot be checked.
/// `None` when every file is in; a file that cannot be opened or read fails the run.
pub fn load(paths: &[PathBuf]) -> Result<Option<NotLoaded>> {
    // Where the available memory cannot be read, no bound: the check after reading
    // tells what fitted.
    let available = crate::memory::available_memory_bytes().unwrap_or(u64::MAX);
    load_within(paths, available)
}

/// [`load`] with `available_bytes` of memory to load into.
pub(super) fn load_within(paths: &[PathBuf], available_bytes: u64) -> Result<Option<NotLoaded>> {
    let page = platform::page_size() as u64;
    let mut to_read = Vec::new();
    let mut missing_bytes = 0u64;
    for path in paths {
        let file = open(path, LOAD)?;
        let visible = platform::cache_visible(path, &file);
        let Residency { resident, pages } = residency_of(path, &file, LOAD)?;
        let missing = if visible { pages - resident } else { pages };
        if missing > 0 {
            missing_bytes = missing_bytes.saturating_add(missing as u64 * page);
            to_read.push((path, file, visible));
        }
    }
    if missing_bytes > available_bytes {
        return Ok(Some(NotLoaded::TooLarge {
            missing_bytes,
            available_bytes,
        }));
    }
    let mut short = Vec::new();
    for (path, mut file, visible) in to_read {
        read_through(&mut file).map_err(|err| failed(path, "cannot read", LOAD, &err))?;
        if visible {
            let Residency { resident, pages } = residency_of(path, &file, LOAD)?;
            if resident < pages {
                short.push((path, pages - resident, pages));
            }
        }
    }
    Ok(short
        .first()
        .map(|&(path, missing, pages)| NotLoaded::Reclaimed {
            path: path.clone(),
            missing,
            pages,
            others: short.len() - 1,
        }))
}

/// Reads `file` to its end, which leaves its pages in the page cache.
fn read_through(file: &mut std::fs::File) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 1 << 20];
    while file.read(&mut buffer)? > 0 {}
    Ok(())
}
