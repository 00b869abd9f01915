//! The PyTorch runtime's scratch folder: the script and the dataset's IDX files for
//! one plan, and the temporary directory its Python processes are given (`TMPDIR`), in
//! a private folder of the temporary directory that is removed when the run drops it:
//! what Python leaves in its temporary directory (multiprocessing's `pymp-*` folders,
//! whose forkserver dies with the script's process group before it can remove them,
//! torch's `torchinductor_*` cache) goes with it. A run that is killed cannot remove its
//! own (45 MB for the built-in data): it is a [`crate::scratch`] folder, which the next
//! one sweeps once its process is gone.

use std::path::{Path, PathBuf};

use loaderbench_engine::error::{Error, Result};

/// What every scratch folder's name starts with, before `<pid>-`.
const PREFIX: &str = "loaderbench-pytorch-";

/// A private scratch folder, removed when dropped.
pub struct ScratchFolder {
    folder: tempfile::TempDir,
}

impl ScratchFolder {
    /// Creates a folder in the temporary directory, after sweeping those left there by
    /// runs that were killed.
    pub fn create() -> Result<ScratchFolder> {
        let folder = crate::scratch::folder(PREFIX)?;
        let scratch = ScratchFolder { folder };
        let temp = scratch.python_temp();
        std::fs::create_dir(&temp).map_err(|err| Error::file(&temp, err.to_string()))?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        self.folder.path()
    }

    /// Where the PyTorch runtime's script is written.
    pub fn script(&self) -> PathBuf {
        self.path().join("pytorch_loader.py")
    }

    /// The temporary directory the script's Python and its workers are given.
    pub fn python_temp(&self) -> PathBuf {
        self.path().join("tmp")
    }
}
