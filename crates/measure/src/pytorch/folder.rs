//! The PyTorch runtime's scratch folder: the script (shipped inside the binary, so that
//! it works from any directory) and the dataset's IDX files for one plan, and the
//! temporary directory its Python processes are given (`TMPDIR`), in a private folder
//! of the temporary directory that is removed when the run drops it: what Python leaves in its temporary directory (multiprocessing's `pymp-*` folders,
//! whose forkserver dies with the script's process group before it can remove them,
//! torch's `torchinductor_*` cache) goes with it. A run that is killed cannot remove its
//! own (45 MB for the built-in data): it is a [`crate::scratch`] folder, which the next
//! one sweeps once its process is gone.

use std::path::{Path, PathBuf};

use loaderbench_engine::error::{Error, Result};

/// The script, shipped inside the binary so that it works from any directory.
pub(super) const SCRIPT: &str = include_str!("../../../../python/pytorch_loader.py");

/// The modules the script imports, written beside it: its training steps, how it reads
/// tar shards, how much of a dataset is Python objects, torchdata.nodes' threads, the
/// SPDL runtime's pipeline, the preloaded Python's fork requests, and what ties a fork
/// server to the script.
pub(super) const SIBLINGS: [(&str, &str); 7] = [
    (
        "pytorch_steps.py",
        include_str!("../../../../python/pytorch_steps.py"),
    ),
    (
        "pytorch_shards.py",
        include_str!("../../../../python/pytorch_shards.py"),
    ),
    (
        "pytorch_objects.py",
        include_str!("../../../../python/pytorch_objects.py"),
    ),
    (
        "spdl_pipeline.py",
        include_str!("../../../../python/spdl_pipeline.py"),
    ),
    (
        "pytorch_nodes.py",
        include_str!("../../../../python/pytorch_nodes.py"),
    ),
    (
        "pytorch_preload.py",
        include_str!("../../../../python/pytorch_preload.py"),
    ),
    (
        "forkserver_tie.py",
        include_str!("../../../../python/forkserver_tie.py"),
    ),
];

/// The script and its siblings, by file name.
pub(super) fn scripts() -> impl Iterator<Item = (&'static str, &'static str)> {
    std::iter::once(("pytorch_loader.py", SCRIPT)).chain(SIBLINGS)
}

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

    /// A new folder holding the script and its siblings.
    pub fn with_scripts() -> Result<ScratchFolder> {
        let folder = ScratchFolder::create()?;
        for (name, text) in scripts() {
            let path = folder.path().join(name);
            std::fs::write(&path, text).map_err(|err| Error::file(&path, err.to_string()))?;
        }
        Ok(folder)
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
