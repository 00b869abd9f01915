//! Scratch folders of a process in the temporary directory: each named by what it is
//! for and the process's id (`loaderbench-rounds-4242-Xa9q`), removed when dropped. A
//! process that is killed cannot remove its own, so each new folder first sweeps the
//! ones of the same kind whose process is gone. The PyTorch runtime's scripts and data,
//! and the journals of tune's and resolve's rounds, are kept in such folders.

use std::path::Path;

use loaderbench_engine::error::{Error, Result};

/// A new scratch folder named `<prefix><pid>-…` in the temporary directory, after
/// sweeping those of `prefix` left there by processes that are gone. A temporary
/// directory that takes no folder (missing, full) fails the run, naming it: it is the
/// machine's, not the user's input.
pub fn folder(prefix: &str) -> Result<tempfile::TempDir> {
    let parent = std::env::temp_dir();
    sweep_stale(&parent, prefix);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(&parent)
        .map_err(|err| {
            let problem = format!("no scratch folder in {}: {err}", parent.display());
            Error::run_caused(problem, err)
        })
}

/// Removes the folders of `prefix` in `parent` whose process is no longer running.
/// Folders it cannot read or remove are left: they are only disk space.
fn sweep_stale(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(prefix))
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

    const PREFIX: &str = "loaderbench-test-";

    #[test]
    fn sweeping_removes_folders_of_gone_processes_only() {
        let parent = tempfile::tempdir().unwrap();
        let mut finished = std::process::Command::new("true").spawn().unwrap();
        finished.wait().unwrap();
        let gone = parent.path().join(format!("{PREFIX}{}-abc", finished.id()));
        let ours = parent
            .path()
            .join(format!("{PREFIX}{}-def", std::process::id()));
        let other_kind = parent
            .path()
            .join(format!("loaderbench-other-{}-ghi", finished.id()));
        for folder in [&gone, &ours, &other_kind] {
            std::fs::create_dir(folder).unwrap();
            std::fs::write(folder.join("train-images-idx3-ubyte"), b"x").unwrap();
        }
        sweep_stale(parent.path(), PREFIX);
        assert!(!gone.exists(), "the gone process's folder is swept");
        assert!(ours.exists(), "a running process's folder is kept");
        assert!(other_kind.exists(), "other kinds of folder are not touched");
    }

    #[test]
    fn a_folder_names_this_process_and_goes_when_dropped() {
        let folder = folder(PREFIX).unwrap();
        let path = folder.path().to_path_buf();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("{PREFIX}{}-", std::process::id())));
        assert!(path.is_dir());
        drop(folder);
        assert!(!path.exists());
    }
}
