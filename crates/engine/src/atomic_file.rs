//! Every file loaderbench saves (exports, results, baselines, presets, PNGs, shards) is
//! written here, whole or not at all: the bytes go to a new file with a unique name in
//! the same folder, are synced to the disk, and the file is renamed over the target, so
//! a reader never sees half a file, two writers leave one of theirs whole, and a failed
//! or interrupted write removes its temporary file. Anything at the path that is not a
//! regular file (a pipe, a device) is written in place. Journals are the exception:
//! they are appended to as a run goes (`measure::journal`).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Replaces the file at `path` with `bytes`.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |out| out.write_all(bytes))
}

/// Replaces the file at `path` with what `fill` writes. An error from `fill`, the sync or
/// the rename leaves `path` as it was and no temporary file behind.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let failed = |err: std::io::Error| Error::file(path, format!("cannot be written: {err}"));
    let replaceable = std::fs::metadata(path).map_or(true, |meta| meta.is_file());
    if !replaceable {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(failed)?;
        return fill(&mut out).map_err(failed);
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".loaderbench-");
    // As a plain new file would be: readable by others unless the umask says otherwise.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let temp = builder.tempfile_in(folder_of(path)).map_err(failed)?;
    let mut out = std::io::BufWriter::new(temp);
    fill(&mut out).and_then(|()| out.flush()).map_err(failed)?;
    let temp = out.into_inner().map_err(|err| failed(err.into_error()))?;
    temp.as_file().sync_all().map_err(failed)?;
    temp.persist(path)
        .map(drop)
        .map_err(|err| failed(err.error))
}

fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old and longer than the new").unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        let error = write_with(&path, |out| {
            out.write_all(&[b'x'; 100_000])?;
            Err(std::io::Error::other("the disk is full"))
        })
        .unwrap_err();
        assert!(error.to_string().contains("out.json"), "{error}");
        assert!(error.to_string().contains("the disk is full"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_folder_that_does_not_exist_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("out.json");
        let error = write(&path, b"x").unwrap_err();
        assert!(error.to_string().contains("out.json"), "{error}");
    }

    #[test]
    fn a_reader_never_sees_the_file_partial() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        let whole = vec![7u8; 8 << 20];
        let reader = {
            let path = path.clone();
            let size = whole.len();
            std::thread::spawn(move || {
                loop {
                    if let Ok(bytes) = std::fs::read(&path) {
                        return bytes.len() == size;
                    }
                    std::thread::yield_now();
                }
            })
        };
        write_with(&path, |out| {
            for chunk in whole.chunks(4096) {
                out.write_all(chunk)?;
            }
            Ok(())
        })
        .unwrap();
        assert!(reader.join().unwrap(), "the reader saw a partial file");
    }
}
