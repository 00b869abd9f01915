//! An image folder's files as our engine listed them, written for the PyTorch runtime's
//! `ImageFolder`, which reads this list instead of walking the folder itself: torchvision's
//! walk takes hidden folders as classes (`.ipynb_checkpoints` shifts every label), reads
//! hidden files and orders a class's nested folders otherwise, so the two runtimes would
//! measure different samples. Each sample is its label in decimal and its path's bytes,
//! each ended by a NUL byte (the one byte no path holds), so that any path, in any
//! encoding, reaches Python as the engine has it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use loaderbench_engine::error::{Error, Result};

/// Writes `files` (each sample's path and label, in index order) to `path`.
pub fn write_image_list(files: &[(PathBuf, i64)], path: &Path) -> Result<()> {
    let failed = |err: std::io::Error| Error::file(path, format!("cannot write: {err}"));
    let mut out = BufWriter::new(File::create(path).map_err(failed)?);
    for (file, label) in files {
        write!(out, "{label}\0").map_err(failed)?;
        out.write_all(file.as_os_str().as_bytes()).map_err(failed)?;
        out.write_all(b"\0").map_err(failed)?;
    }
    out.flush().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sample_is_its_label_and_its_path_each_ended_by_a_nul() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("images.list");
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/d/a\nb\xff.png"));
        write_image_list(&[(PathBuf::from("/d/x.jpg"), 0), (odd, 12)], &list).unwrap();
        assert_eq!(
            std::fs::read(&list).unwrap(),
            b"0\0/d/x.jpg\x0012\0/d/a\nb\xff.png\0"
        );
    }
}
