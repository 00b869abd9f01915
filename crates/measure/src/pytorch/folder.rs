//! The PyTorch runtime's scratch folder: the script and the dataset's IDX files for
//! one plan, and the temporary directory its Python processes are given (`TMPDIR`), in
//! a private folder of the temporary directory that is removed when the run drops it:
//! what Python leaves in its temporary directory (multiprocessing's `pymp-*` folders,
//! whose forkserver dies with the script's process group before it can remove them,
//! torch's `torchinductor_*` cache) goes with it. A run that is killed cannot remove its own (45 MB for the built-in
//! data), so each new folder first sweeps the ones whose process is gone: the process
//! id is part of every folder's name.

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
        let parent = std::env::temp_dir();
        sweep_stale(&parent);
        let folder = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(&parent)
            .map_err(|err| Error::file(&parent, format!("cannot create a folder in it: {err}")))?;
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

/// Removes the scratch folders in `parent` whose process is no longer running. Folders
/// it cannot read or remove are left: they are only disk space.
pub fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !process_exists(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a process with this id runs (on platforms that cannot tell: yes, so nothing
/// is swept).
fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return true;
        };
        // Only "no such process" means gone; "not permitted" means it runs as someone else.
        !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeping_removes_folders_of_gone_processes_only() {
        let parent = tempfile::tempdir().unwrap();
        let mut finished = std::process::Command::new("true").spawn().unwrap();
        finished.wait().unwrap();
        let gone = parent.path().join(format!("{PREFIX}{}-abc", finished.id()));
        let ours = parent
            .path()
            .join(format!("{PREFIX}{}-def", std::process::id()));
        let unrelated = parent.path().join("loaderbench-other-1");
        for folder in [&gone, &ours, &unrelated] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("train-images-idx3-ubyte"), b"x").unwrap();
        }
        sweep_stale(parent.path());
        assert!(!gone.exists(), "the gone process's folder is swept");
        assert!(ours.exists(), "a running process's folder is kept");
        assert!(unrelated.exists(), "other folders are not touched");
    }

    #[test]
    fn a_created_folder_names_this_process_and_goes_when_dropped() {
        let folder = ScratchFolder::create().unwrap();
        let path = folder.path().to_path_buf();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("{PREFIX}{}-", std::process::id())));
        assert!(path.is_dir());
        drop(folder);
        assert!(!path.exists());
    }
}
