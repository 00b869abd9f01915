//! The Python environment that measured a run's configs on the Python runtimes
//! (`pytorch`, `spdl`): the interpreter and the versions of what it ran, kept in each
//! result and summed up in one line under the tables.

use serde::{Deserialize, Serialize};

/// The Python environment of the Python runtimes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonEnvironment {
    /// The interpreter loaderbench ran.
    pub executable: std::path::PathBuf,
    pub python: String,
    pub torch: String,
    pub torchvision: String,
    /// spdl-core's version, where the SPDL runtime measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spdl: Option<String>,
}

impl PythonEnvironment {
    /// One line for tables: `Python 3.11.2 · torch 2.13.0 · torchvision 0.28.0 (path)`,
    /// with `· spdl 0.8.0` after torchvision where the SPDL runtime measured.
    pub fn summary(&self) -> String {
        let spdl = self
            .spdl
            .as_ref()
            .map_or_else(String::new, |version| format!(" · spdl {version}"));
        format!(
            "Python {} · torch {} · torchvision {}{spdl} ({})",
            self.python,
            self.torch,
            self.torchvision,
            self.executable.display()
        )
    }
}
