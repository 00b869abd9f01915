//! The paths a preset holds (`dataset.path`, `dataset.labels`, `step.path`, `python`),
//! relative to the preset file's folder, as cargo's and docker compose's files are:
//! [`Preset::load`](super::Preset::load) resolves them when it reads the file, before any
//! `--set` applies (a path typed on a command line stays relative to the current
//! directory), so a loaded preset holds absolute paths. Saving writes each path relative
//! to the folder of the file written where it lies under that folder, else absolute
//! ([`Preset::relative_to`]), so a preset saved beside its data moves with it and one
//! saved anywhere else still finds it. Kept as written: absolute paths, URLs (a shard
//! pattern such as `https://host/s-{0..9}.tar?sig=${SIG}`, its `${VAR}` filled in only
//! when fetched), empty paths (a step with no file yet), and a `python` that is a bare
//! command name (`python3`), which is looked up on `PATH` as a shell does. The values in
//! a Python dataset's or step's `args` are the user's own and are passed as written.

use std::path::{Component, Path, PathBuf};

use super::Preset;

/// The fields that hold paths, as `--set` and error messages name them.
const DATASET_PATH: &str = "dataset.path";
const DATASET_LABELS: &str = "dataset.labels";
const STEP_PATH: &str = "step.path";
const PYTHON: &str = "python";

impl Preset {
    /// The paths the preset holds, each with its field, in the order above; a field
    /// left empty is left out.
    pub fn paths(&self) -> Vec<(&'static str, &Path)> {
        [
            (DATASET_PATH, self.dataset.path.as_deref()),
            (DATASET_LABELS, self.dataset.labels.as_deref()),
            (STEP_PATH, self.step.path()),
            (PYTHON, self.python.as_deref()),
        ]
        .into_iter()
        .filter_map(|(field, path)| Some((field, path?)))
        .filter(|(_, path)| !path.as_os_str().is_empty())
        .collect()
    }

    /// Every path that names a local file, mutably (URLs, absolute paths, empty ones and
    /// a bare `python` command left out).
    fn local_relative_paths_mut(&mut self) -> Vec<&mut PathBuf> {
        [
            (DATASET_PATH, self.dataset.path.as_mut()),
            (DATASET_LABELS, self.dataset.labels.as_mut()),
            (STEP_PATH, self.step.path_mut()),
            (PYTHON, self.python.as_mut()),
        ]
        .into_iter()
        .filter_map(|(field, path)| path.filter(|path| names_a_local_file(field, path)))
        .collect()
    }

    /// Resolves every relative path the preset holds against `folder` (the preset
    /// file's, made absolute).
    pub fn resolve_paths(&mut self, folder: &Path) {
        for path in self.local_relative_paths_mut() {
            if path.is_relative() {
                *path = folder.join(without_current_dir(path));
            }
        }
    }

    /// This preset as a file in `folder` (absolute) holds it: every path made absolute
    /// (a relative one is relative to the current directory, as a `--set` or a path
    /// typed in the app is), then written relative to `folder` where it lies under it.
    pub fn relative_to(&self, folder: &Path) -> std::io::Result<Preset> {
        let mut preset = self.clone();
        for path in preset.local_relative_paths_mut() {
            let absolute = std::path::absolute(&*path)?;
            *path = match absolute.strip_prefix(folder) {
                Ok(inside) if is_plain_descent(inside) => inside.to_path_buf(),
                _ => absolute,
            };
        }
        Ok(preset)
    }
}

/// Whether `path`, in `field`, names a file on this machine that a relative form would
/// leave ambiguous: not empty, not a URL, and for `python` more than a command name.
fn names_a_local_file(field: &str, path: &Path) -> bool {
    let text = path.to_string_lossy();
    let command_name = field == PYTHON && path.components().count() == 1 && path.is_relative();
    !text.is_empty() && !text.contains("://") && !command_name
}

/// `path` without its `.` components (`./data` is `data`), so a resolved path reads
/// plainly; `..` stays, since only the file system knows where it leads past a link.
fn without_current_dir(path: &Path) -> PathBuf {
    path.components()
        .filter(|part| *part != Component::CurDir)
        .collect()
}

/// Whether `path` goes only down, through named folders, and is not empty.
fn is_plain_descent(path: &Path) -> bool {
    path.components().next().is_some()
        && path
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use crate::dataset::{DatasetKind, DatasetSpec};
    use crate::step::StepSpec;

    use super::*;

    fn preset_with(dataset: &str, labels: &str, step: &str, python: &str) -> Preset {
        Preset {
            dataset: DatasetSpec {
                kind: DatasetKind::Npy,
                path: Some(dataset.into()),
                labels: Some(labels.into()),
                ..DatasetSpec::default()
            },
            step: StepSpec::Model {
                path: step.into(),
                lr: 0.01,
            },
            python: Some(python.into()),
            ..Preset::default()
        }
    }

    fn paths(preset: &Preset) -> Vec<String> {
        preset
            .paths()
            .into_iter()
            .map(|(_, path)| path.display().to_string())
            .collect()
    }

    #[test]
    fn relative_paths_resolve_against_the_folder_and_the_rest_are_kept() {
        let mut preset = preset_with("./data/x.npy", "../y.npy", "m.pt", "venv/bin/python");
        preset.resolve_paths(Path::new("/p/bench"));
        assert_eq!(
            paths(&preset),
            [
                "/p/bench/data/x.npy",
                "/p/bench/../y.npy",
                "/p/bench/m.pt",
                "/p/bench/venv/bin/python"
            ]
        );
        let kept = [
            (
                "/abs/x.npy",
                "https://h/s-{0..3}.tar?sig=${SIG}",
                "",
                "python3",
            ),
            ("s3://b/x.tar", "/l.npy", "/m.pt", "/usr/bin/python3"),
        ];
        for (dataset, labels, step, python) in kept {
            let mut preset = preset_with(dataset, labels, step, python);
            let before = preset.clone();
            preset.resolve_paths(Path::new("/p/bench"));
            assert_eq!(preset, before);
        }
    }

    #[test]
    fn saving_writes_paths_under_the_folder_relative_and_the_rest_absolute() {
        let preset = preset_with("/p/bench/data/x.npy", "/p/y.npy", "m.pt", "python3");
        let saved = preset.relative_to(Path::new("/p/bench")).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            paths(&saved),
            [
                "data/x.npy".to_owned(),
                "/p/y.npy".to_owned(),
                // Relative in memory is relative to the current directory.
                cwd.join("m.pt").display().to_string(),
                "python3".to_owned(),
            ]
        );
        let mut loaded = saved.clone();
        loaded.resolve_paths(Path::new("/p/bench"));
        assert_eq!(
            loaded,
            preset_with(
                "/p/bench/data/x.npy",
                "/p/y.npy",
                &cwd.join("m.pt").display().to_string(),
                "python3"
            )
        );
    }

    #[test]
    fn a_path_that_climbs_out_of_the_folder_is_saved_absolute() {
        let preset = preset_with("/p/bench/../other/x.npy", "/p/bench", "", "python3");
        let saved = preset.relative_to(Path::new("/p/bench")).unwrap();
        assert_eq!(
            paths(&saved),
            ["/p/bench/../other/x.npy", "/p/bench", "python3"]
        );
    }
}
