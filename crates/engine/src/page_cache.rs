//! The page cache, for `cache: cold` and `cache: warm`. [`evict`] asks the kernel to drop
//! a dataset's files from memory (`posix_fadvise(POSIX_FADV_DONTNEED)`, after writing back
//! any dirty pages, which it would otherwise keep) and then checks with `mincore` over a
//! fresh mapping of each file that its pages left. Where they cannot, it says which file
//! and why ([`Stayed`]): the file lives on tmpfs or ramfs, whose pages are its storage;
//! some process still has the pages mapped (the kernel never drops a mapped page; our own
//! mappings are released first by [`Dataset::release_mapped_pages`](crate::dataset::Dataset::release_mapped_pages),
//! another process's, such as a persistent worker's, stay); or `mincore` cannot see the
//! file's cache, which the kernel only shows to its owner or whoever may write it.
//! [`load`] is its mirror: it reads every file `mincore` shows is not all in memory and
//! checks with `mincore` that it then is; where the missing pages are more than the
//! memory available, or the kernel reclaimed some as they came in, it says so
//! ([`NotLoaded`]). No root is needed. Linux only ([`SUPPORTED`]); elsewhere both refuse.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Whether this platform can evict files from the page cache and check it.
pub const SUPPORTED: bool = cfg!(target_os = "linux");

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

/// How much of a file is in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    pub resident: usize,
    pub pages: usize,
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
    load_within(paths, available_memory_bytes())
}

/// [`load`] with `available_bytes` of memory to load into.
fn load_within(paths: &[PathBuf], available_bytes: u64) -> Result<Option<NotLoaded>> {
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

/// The memory the kernel could give without swapping (`MemAvailable`); where it cannot
/// be read, no bound, and [`load`]'s check after reading tells what fitted.
fn available_memory_bytes() -> u64 {
    use sysinfo::{MemoryRefreshKind, RefreshKind, System};
    let memory = RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram());
    System::new_with_specifics(memory)
        .ok()
        .map(|system| system.available_memory())
        .filter(|&bytes| bytes > 0)
        .unwrap_or(u64::MAX)
}

/// How many of the file's pages are in the page cache, by `mincore` over a fresh
/// mapping (which maps no page until touched, so what it sees is the cache's).
pub fn residency(path: &Path) -> Result<Residency> {
    let file = open(path, CHECK)?;
    residency_of(path, &file, CHECK)
}

/// What an error says the file was opened for.
const EVICT: &str = "to evict it from the page cache";
const LOAD: &str = "to load it into the page cache";
const CHECK: &str = "to check its pages in the page cache";

fn open(path: &Path, purpose: &str) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|err| failed(path, "cannot open", purpose, &err))
}

fn residency_of(path: &Path, file: &std::fs::File, purpose: &str) -> Result<Residency> {
    platform::residency(file).map_err(|err| failed(path, "cannot check residency", purpose, &err))
}

fn failed(path: &Path, what: &str, purpose: &str, err: &std::io::Error) -> Error {
    Error::run(format!("{}: {what} {purpose}: {err}", path.display()))
}

/// Evicts one file; `Some(why)` when its pages stayed.
fn evict_file(path: &Path) -> Result<Option<Why>> {
    let file = open(path, EVICT)?;
    if let Some(fs) = platform::memory_file_system(&file)
        .map_err(|e| failed(path, "cannot stat", EVICT, &e))?
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

#[cfg(target_os = "linux")]
mod platform {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    use super::Residency;

    /// `TMPFS_MAGIC` and `RAMFS_MAGIC` of linux/magic.h.
    const IN_MEMORY: [(u64, &str); 2] = [(0x0102_1994, "tmpfs"), (0x8584_58f6, "ramfs")];

    /// The name of the in-memory file system `file` lives on, if it does.
    pub fn memory_file_system(file: &File) -> io::Result<Option<&'static str>> {
        let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
        // SAFETY: the descriptor is open for the call, and fstatfs fills `stat` whole
        // when it returns 0, which is checked before `stat` is read.
        let stat = unsafe {
            if libc::fstatfs(file.as_raw_fd(), stat.as_mut_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            stat.assume_init()
        };
        // The magic is a 32-bit value that some targets hold in a signed type.
        let magic = (stat.f_type as u64) & 0xffff_ffff;
        Ok(IN_MEMORY
            .iter()
            .find(|(known, _)| *known == magic)
            .map(|(_, name)| *name))
    }

    /// Writes back the file's dirty pages and waits (the kernel keeps dirty pages and
    /// pages under writeback), then drops its clean, unmapped pages.
    pub fn drop_pages(file: &File) -> io::Result<()> {
        let fd = file.as_raw_fd();
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: plain system calls on an open descriptor; no memory is passed.
        unsafe {
            if libc::sync_file_range(fd, 0, 0, flags) != 0 {
                return Err(io::Error::last_os_error());
            }
            match libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) {
                0 => Ok(()),
                code => Err(io::Error::from_raw_os_error(code)),
            }
        }
    }

    /// Whether `mincore` reports the file's page cache to this user: the kernel does for
    /// the file's owner, a user who may write it, or a privileged one, and otherwise
    /// reports every page as resident.
    pub fn cache_visible(path: &Path, file: &File) -> bool {
        // SAFETY: geteuid cannot fail and touches no memory.
        let user = unsafe { libc::geteuid() };
        let owner = file.metadata().map(|m| m.uid()).ok();
        let writable = CString::new(path.as_os_str().as_bytes()).is_ok_and(|name| {
            // SAFETY: `name` is a NUL-terminated string that outlives the call.
            unsafe { libc::access(name.as_ptr(), libc::W_OK) == 0 }
        });
        user == 0 || owner == Some(user) || writable
    }

    pub fn page_size() -> usize {
        // SAFETY: sysconf has no memory effects.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    }

    pub fn residency(file: &File) -> io::Result<Residency> {
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| io::Error::other("the file is larger than the address space"))?;
        if len == 0 {
            return Ok(Residency {
                resident: 0,
                pages: 0,
            });
        }
        // SAFETY: a read-only shared mapping that is never read, only inspected by
        // mincore, so a file changed underneath cannot be misread.
        let map = unsafe { memmap2::Mmap::map(file)? };
        let page = page_size();
        let mut vec = vec![0u8; len.div_ceil(page)];
        // SAFETY: `map` is a live mapping of `len` bytes starting page-aligned, and `vec`
        // holds one byte per page of it, as mincore writes.
        let status =
            unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, len, vec.as_mut_ptr()) };
        if status != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Residency {
            resident: vec.iter().filter(|&&page| page & 1 == 1).count(),
            pages: vec.len(),
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use std::fs::File;
    use std::io;
    use std::path::Path;

    use super::Residency;

    fn unsupported() -> io::Error {
        io::Error::other("the page cache is checked on Linux only (posix_fadvise and mincore)")
    }

    pub fn page_size() -> usize {
        4096
    }

    pub fn memory_file_system(_: &File) -> io::Result<Option<&'static str>> {
        Err(unsupported())
    }

    pub fn drop_pages(_: &File) -> io::Result<()> {
        Err(unsupported())
    }

    pub fn cache_visible(_: &Path, _: &File) -> bool {
        false
    }

    pub fn residency(_: &File) -> io::Result<Residency> {
        Err(unsupported())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::Write;

    use super::*;

    /// A 1 MiB file written through the page cache and synced, in `dir`.
    fn written(dir: &Path) -> PathBuf {
        let path = dir.join("data.bin");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; 1 << 20]).unwrap();
        file.sync_all().unwrap();
        path
    }

    /// A folder beside the test binary, on the disk the build is on: /tmp may be tmpfs.
    fn disk_folder() -> tempfile::TempDir {
        let exe = std::env::current_exe().unwrap();
        tempfile::tempdir_in(exe.parent().unwrap()).unwrap()
    }

    fn read_whole(path: &Path) {
        assert_eq!(std::fs::read(path).unwrap().len(), 1 << 20);
    }

    #[test]
    fn a_file_on_disk_leaves_the_page_cache_and_mincore_sees_it_leave() {
        let dir = disk_folder();
        let path = written(dir.path());
        read_whole(&path);
        let warm = residency(&path).unwrap();
        assert_eq!(warm.pages, (1 << 20) / 4096);
        assert_eq!(warm.resident, warm.pages, "a file just read is warm");
        assert_eq!(evict(std::slice::from_ref(&path)).unwrap(), []);
        assert_eq!(residency(&path).unwrap().resident, 0, "evicted");
        read_whole(&path);
        assert!(
            residency(&path).unwrap().resident > 0,
            "read again, warm again"
        );
    }

    #[test]
    fn pages_this_process_holds_mapped_stay_and_are_reported() {
        let dir = disk_folder();
        let path = written(dir.path());
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: nothing writes the test's file while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let touched: u64 = map.iter().step_by(4096).map(|&b| u64::from(b)).sum();
        assert_eq!(touched, 7 * 256);
        let stayed = evict(std::slice::from_ref(&path)).unwrap();
        assert_eq!(stayed.len(), 1);
        assert_eq!(
            stayed[0].why,
            Why::Held {
                resident: 256,
                pages: 256
            }
        );
        drop(map);
        assert_eq!(
            evict(std::slice::from_ref(&path)).unwrap(),
            [],
            "unmapped, it leaves"
        );
    }

    #[test]
    fn a_memory_mapped_dataset_releases_its_pages_so_that_its_files_can_leave() {
        use crate::dataset::{DatasetKind, DatasetSpec, open};
        let dir = disk_folder();
        let (count, side) = (512u32, 28u32);
        let mut images = [0, 0, 8, 3].to_vec();
        for dim in [count, side, side] {
            images.extend(dim.to_be_bytes());
        }
        images.extend((0..count * side * side).map(|i| i as u8));
        let mut labels = [0, 0, 8, 1].to_vec();
        labels.extend(count.to_be_bytes());
        labels.extend((0..count).map(|i| (i % 10) as u8));
        let images_path = dir.path().join("train-images-idx3-ubyte");
        let labels_path = dir.path().join("train-labels-idx1-ubyte");
        for (path, bytes) in [(&images_path, images), (&labels_path, labels)] {
            let mut file = std::fs::File::create(path).unwrap();
            file.write_all(&bytes).unwrap();
            file.sync_all().unwrap();
        }
        let spec = DatasetSpec {
            kind: DatasetKind::Idx,
            path: Some(images_path.clone()),
            ..DatasetSpec::default()
        };
        let dataset = open(&spec, None).unwrap();
        assert_eq!(dataset.files(), [images_path, labels_path]);
        let mut pixels = vec![0; dataset.shape().sample_bytes()];
        for index in 0..dataset.len() {
            dataset.read(index, &mut pixels).unwrap();
        }
        let stayed = evict(&dataset.files()).unwrap();
        assert_eq!(stayed.len(), 2, "read through its maps, both files stay");
        dataset.release_mapped_pages().unwrap();
        assert_eq!(evict(&dataset.files()).unwrap(), [], "released, both leave");
        dataset.read(3, &mut pixels).unwrap();
        assert_eq!(
            pixels[0],
            (3 * side * side) as u8,
            "and read again from the file"
        );
    }

    #[test]
    fn an_evicted_file_is_loaded_back_and_mincore_sees_it_in() {
        let dir = disk_folder();
        let path = written(dir.path());
        assert_eq!(evict(std::slice::from_ref(&path)).unwrap(), []);
        assert_eq!(residency(&path).unwrap().resident, 0);
        assert_eq!(load(std::slice::from_ref(&path)).unwrap(), None);
        let loaded = residency(&path).unwrap();
        assert_eq!(loaded.resident, loaded.pages, "all of it is in");
    }

    #[test]
    fn files_larger_than_the_memory_available_are_not_read_and_that_is_said() {
        let dir = disk_folder();
        let path = written(dir.path());
        assert_eq!(evict(std::slice::from_ref(&path)).unwrap(), []);
        let not_loaded = load_within(std::slice::from_ref(&path), 1 << 19).unwrap();
        assert_eq!(
            not_loaded,
            Some(NotLoaded::TooLarge {
                missing_bytes: 1 << 20,
                available_bytes: 1 << 19
            })
        );
        assert_eq!(residency(&path).unwrap().resident, 0, "nothing was read");
        assert_eq!(
            not_loaded.unwrap().to_string(),
            "1.0 MB of the dataset's files are not in the page cache, more than the 0.5 MB \
             of memory available: they cannot all be held there"
        );
        let reclaimed = NotLoaded::Reclaimed {
            path: path.clone(),
            missing: 3,
            pages: 256,
            others: 2,
        };
        assert!(
            reclaimed.to_string().ends_with(
                "data.bin and 2 other files: 3 of 256 pages were not in the page cache after \
                 it was read (the kernel reclaimed them for other memory)"
            ),
            "{reclaimed}"
        );
    }

    #[test]
    fn a_file_on_tmpfs_is_reported_as_not_evictable() {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return;
        }
        let dir = tempfile::tempdir_in(shm).unwrap();
        let path = written(dir.path());
        let stayed = evict(std::slice::from_ref(&path)).unwrap();
        assert_eq!(stayed.len(), 1);
        assert_eq!(stayed[0].why, Why::InMemory("tmpfs"));
        assert!(stayed[0].why.to_string().contains("tmpfs"));
    }

    #[test]
    fn a_missing_file_fails_naming_it() {
        let err = evict(&[PathBuf::from("no/such/file.png")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("no/such/file.png: cannot open"), "{err}");
    }
}
