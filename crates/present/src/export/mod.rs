//! Exporters: each turns a [`RunResult`] into the bytes of one file format, reading the
//! result and nothing else. [`Format`] is the one list of them, which the CLI's flags,
//! the app's menus and both faces' writers read.

mod csv;
mod json;
pub mod markdown;

use loaderbench_engine::error::Result;
use loaderbench_measure::results::RunResult;

pub use self::csv::Csv;
pub use self::json::Json;
pub use self::markdown::Markdown;

/// A results file format.
pub trait Exporter {
    /// The usual file extension, without the dot.
    fn extension(&self) -> &'static str;

    /// The file's contents.
    fn export(&self, result: &RunResult) -> Result<Vec<u8>>;
}

/// A results file format: one of the exporters, with what menus call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
}

impl Format {
    /// Every format, in the order menus list them.
    pub const ALL: [Format; 3] = [Format::Json, Format::Csv, Format::Markdown];

    /// What menus call it.
    pub fn label(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Csv => "CSV",
            Format::Markdown => "Markdown",
        }
    }

    /// Its exporter.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Json => &Json,
            Format::Csv => &Csv,
            Format::Markdown => &Markdown,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Snapshots: each exporter's output for one fixed result, compared with the files
    //! committed under tests/data/snapshots. After an intended change, rerun with
    //! `LOADERBENCH_UPDATE_SNAPSHOTS=1` and review the files' diff.

    use std::path::PathBuf;

    use super::*;
    use loaderbench_engine::preset::StartMethod;
    use loaderbench_measure::fixtures::{config, epoch, result, run, two_epochs, with_startups};

    fn fixed_result() -> RunResult {
        let mut configs = vec![config(0, false), config(2, true)];
        for config in &mut configs {
            // The platform's default would make the snapshot differ between systems.
            config.start_method = StartMethod::Fork;
        }
        let mut disturbed = run(1, configs[1].clone(), vec![epoch(1, 0.5, 0.01, 3)]);
        disturbed.epochs.push(epoch(2, 0.02, 0.01, 3));
        disturbed.epochs[0].other_load_cores = Some(1.25);
        disturbed.epochs[0].own_cpu_s = Some(0.75);
        disturbed.disturbed = true;
        disturbed.python = Some(loaderbench_measure::results::PythonEnvironment {
            executable: PathBuf::from("/venv/bin/python"),
            python: "3.11.2".to_owned(),
            torch: "2.13.0".to_owned(),
            torchvision: "0.28.0".to_owned(),
            spdl: None,
        });
        let results = vec![
            run(0, configs[0].clone(), two_epochs(0.004, 0.02, 3)),
            with_startups(disturbed, &[1], 0.2),
        ];
        result(configs, results)
    }

    fn check_snapshot(exporter: &dyn Exporter) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/snapshots")
            .join(format!("export.{}", exporter.extension()));
        let actual = String::from_utf8(exporter.export(&fixed_result()).unwrap()).unwrap();
        if std::env::var_os("LOADERBENCH_UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &actual).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "{}: {err}; write it with LOADERBENCH_UPDATE_SNAPSHOTS=1",
                path.display()
            )
        });
        if actual != expected {
            let line = actual
                .lines()
                .zip(expected.lines())
                .position(|(a, e)| a != e)
                .map_or_else(|| "the end".to_owned(), |i| format!("line {}", i + 1));
            panic!(
                "{} differs from the export at {line}; if the change is intended, rerun \
                 with LOADERBENCH_UPDATE_SNAPSHOTS=1 and review the diff.\n--- actual ---\n{actual}",
                path.display()
            );
        }
    }

    #[test]
    fn json_matches_its_snapshot() {
        check_snapshot(&Json);
    }

    #[test]
    fn csv_matches_its_snapshot() {
        check_snapshot(&Csv);
    }

    #[test]
    fn markdown_matches_its_snapshot() {
        check_snapshot(&Markdown);
    }
}
