//! Python snippets over the PyTorch runtime's own script (python/pytorch_loader.py), for
//! the tests that look at what its datasets and loaders give: a snippet runs with the
//! script's folder as its first argument and its result file as its second, reads its
//! requests as JSON lines on its standard input (several in one process: `import torch`
//! once), and what it wrote is read back once it has exited.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use loaderbench_measure::pytorch::Request;

use crate::common::{self, stderr, wait_with_deadline};

/// A snippet started on its requests.
pub struct Snippet {
    child: Child,
    out: PathBuf,
}

impl Snippet {
    /// Starts the Python source `code` on `requests`, with each `(variable, value)` of
    /// `marks` in its environment; it writes its result to `out`, whose folder takes
    /// Python's temporary files too.
    pub fn start(code: &str, requests: &[Request], out: &Path, marks: &[(&str, &str)]) -> Snippet {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
        let mut command = common::process::python_in(out.parent().expect("a folder"));
        command
            .args(["-c", code])
            .arg(&scripts)
            .arg(out)
            .envs(marks.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("python starts");
        let mut stdin = child.stdin.take().unwrap();
        for request in requests {
            writeln!(stdin, "{}", serde_json::to_string(request).unwrap()).unwrap();
        }
        Snippet {
            child,
            out: out.to_path_buf(),
        }
    }

    /// What the snippet wrote to its result file, as JSON, once it has succeeded within
    /// `limit`.
    pub fn result(self, limit: Duration) -> serde_json::Value {
        let output = wait_with_deadline(self.child, limit);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice(&std::fs::read(&self.out).unwrap()).expect("the snippet's JSON")
    }
}
