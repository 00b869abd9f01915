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

mod evict;
mod load;

use std::path::Path;

use crate::error::{Error, Result};

pub use evict::{Stayed, Why, evict};
pub use load::{NotLoaded, load};

/// Whether this platform can evict files from the page cache, load them and check it.
pub const SUPPORTED: bool = cfg!(target_os = "linux");

/// How much of a file is in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    pub resident: usize,
    pub pages: usize,
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
    use std::path::PathBuf;

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
        let not_loaded = super::load::load_within(std::slice::from_ref(&path), 1 << 19).unwrap();
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
