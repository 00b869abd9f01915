//! The native file dialogs behind every Browse button and the File menu's Open and Save
//! as (rfd), and what the app says where none can open. On Linux and the BSDs rfd asks the
//! desktop's file-chooser portal over the D-Bus session bus and, failing that, runs
//! zenity; with neither it returns as if the user had cancelled, and a click on Browse
//! would do nothing. That is the case on a training server reached through X forwarding,
//! VNC or Xvfb without a desktop session, so there the app does not try: it says what is
//! missing and points to the path field beside every Browse button. A session bus without
//! the portal still fails silently (rfd only logs it); that cannot be told before trying.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use loaderbench_engine::dataset::DatasetKind;

use super::actions::Pick;

/// Why no file dialog can open on this machine, where that can be known before trying;
/// `None` where one may (always on macOS and Windows, whose dialogs are the system's).
pub fn unavailable_here() -> Option<String> {
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        return None;
    }
    // zbus's socket without an address: $XDG_RUNTIME_DIR/bus, or /run/user/<euid>/bus.
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(
        || PathBuf::from(format!("/run/user/{}", effective_uid())),
        PathBuf::from,
    );
    unavailable(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").as_deref(),
        &runtime_dir.join("bus"),
        std::env::var_os("PATH").as_deref(),
    )
}

/// Why rfd can show no dialog, given the session bus's address (its variable), the
/// socket zbus falls back to without one, and the PATH where rfd looks for zenity.
fn unavailable(
    bus_address: Option<&OsStr>,
    bus_socket: &Path,
    path: Option<&OsStr>,
) -> Option<String> {
    let has_bus = bus_address.is_some_and(|address| !address.is_empty()) || bus_socket.exists();
    let has_zenity = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .any(|dir| is_executable(&dir.join("zenity")));
    if has_bus || has_zenity {
        return None;
    }
    Some(format!(
        "No file dialog can open here: the desktop's file-chooser portal needs a D-Bus \
         session (DBUS_SESSION_BUS_ADDRESS is unset, and {} does not exist), and zenity, \
         the other way, is not on PATH. Type the path into the field beside the button, or \
         install zenity.",
        bus_socket.display()
    ))
}

#[cfg(unix)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn effective_uid() -> u32 {
    0
}

#[cfg(unix)]
fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(file: &Path) -> bool {
    file.is_file()
}

/// The file filter of a dataset kind read from one file; `None` for a folder.
fn dataset_filter(kind: DatasetKind) -> Option<(&'static str, &'static [&'static str])> {
    match kind {
        DatasetKind::Npy => Some(("NumPy array", &["npy"])),
        // IDX files are named `train-images-idx3-ubyte`, gzipped or not.
        DatasetKind::Idx => Some(("IDX images", &["gz", "idx3-ubyte", "ubyte", "idx"])),
        DatasetKind::ImageFolder
        | DatasetKind::Synthetic
        | DatasetKind::Python
        | DatasetKind::Shards => None,
    }
}

/// Shows the dialog `pick` asks for, starting in `start`'s directory (or its file's);
/// `None` when the user cancelled it (or when rfd could not show it: see the module).
pub fn show(pick: Pick, start: Option<PathBuf>) -> Option<PathBuf> {
    let mut dialog = rfd::FileDialog::new();
    let dir = start
        .as_deref()
        .and_then(|p| if p.is_dir() { Some(p) } else { p.parent() })
        .filter(|dir| dir.is_dir());
    if let Some(dir) = dir {
        dialog = dialog.set_directory(dir);
    }
    match pick {
        Pick::OpenPreset => dialog
            .add_filter("loaderbench preset", &["ron"])
            .set_title("Open a preset")
            .pick_file(),
        Pick::OpenResults => dialog
            .add_filter("loaderbench results or journal", &["json", "jsonl"])
            .set_title("Open results")
            .pick_file(),
        Pick::AddResults => dialog
            .add_filter("loaderbench results or journal", &["json", "jsonl"])
            .set_title("Add results to the plots")
            .pick_file(),
        Pick::SavePresetAs => dialog
            .add_filter("loaderbench preset", &["ron"])
            .set_title("Save the preset as")
            .save_file(),
        Pick::Dataset(kind) => match dataset_filter(kind) {
            Some((name, extensions)) => dialog
                .add_filter(name, extensions)
                .add_filter("all files", &["*"])
                .set_title("Choose the dataset file")
                .pick_file(),
            None => dialog.set_title("Choose the dataset folder").pick_folder(),
        },
        Pick::PythonModule => dialog
            .add_filter("Python module", &["py"])
            .set_title("Choose your dataset's module")
            .pick_file(),
        Pick::StepModel => dialog
            .add_filter("TorchScript model", &["pt"])
            .add_filter("all files", &["*"])
            .set_title("Choose your TorchScript model")
            .pick_file(),
        Pick::StepModule => dialog
            .add_filter("Python module", &["py"])
            .set_title("Choose your training step's module")
            .pick_file(),
        Pick::ExportPath => dialog.set_title("Export to").save_file(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_datasets_are_picked_with_their_filter_and_image_folders_as_folders() {
        assert_eq!(dataset_filter(DatasetKind::Npy).unwrap().1, ["npy"]);
        assert!(dataset_filter(DatasetKind::Idx).unwrap().1.contains(&"gz"));
        assert_eq!(dataset_filter(DatasetKind::ImageFolder), None);
    }

    #[test]
    fn without_a_session_bus_or_zenity_the_app_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("bus");
        let why = unavailable(None, &socket, Some(dir.path().as_os_str())).unwrap();
        assert!(why.contains("DBUS_SESSION_BUS_ADDRESS is unset"), "{why}");
        assert!(why.contains(&socket.display().to_string()), "{why}");
        assert!(why.contains("zenity"), "{why}");
        assert!(why.contains("Type the path into the field"), "{why}");
        assert!(
            unavailable(Some(OsStr::new("")), &socket, None).is_some(),
            "an empty address is none"
        );
    }

    #[test]
    fn a_session_bus_or_an_executable_zenity_lets_rfd_try() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("bus");
        let no_zenity = Some(dir.path().as_os_str());
        let address = OsStr::new("unix:path=/run/user/1000/bus");
        assert_eq!(unavailable(Some(address), &socket, no_zenity), None);
        std::fs::write(&socket, b"").unwrap();
        assert_eq!(unavailable(None, &socket, no_zenity), None);

        let bin = tempfile::tempdir().unwrap();
        let zenity = bin.path().join("zenity");
        std::fs::write(&zenity, b"#!/bin/sh\n").unwrap();
        let path = std::env::join_paths([dir.path(), bin.path()]).unwrap();
        let nowhere = dir.path().join("no-bus");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert!(
                unavailable(None, &nowhere, Some(path.as_os_str())).is_some(),
                "a zenity that is not executable does not count"
            );
            std::fs::set_permissions(&zenity, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(unavailable(None, &nowhere, Some(path.as_os_str())), None);
    }
}
