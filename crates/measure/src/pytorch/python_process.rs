//! The Python child process: which interpreter runs the script, starting it in its own
//! process group (so its DataLoader workers can be killed with it) with a temporary
//! directory of the run's own (`TMPDIR`, removed with the run), reading its stdout
//! and stderr on threads (so a silent or chatty child never blocks us), and killing the
//! whole group when it is dropped.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, unbounded};

use loaderbench_engine::child_processes::{collect_tail, lossy_lines};
use loaderbench_engine::error::{Error, Result};

/// The environment variable that names the Python to run.
pub const PYTHON_VAR: &str = "LOADERBENCH_PYTHON";

/// The Python that runs the PyTorch runtime: `$LOADERBENCH_PYTHON`, else the virtual
/// environment's python beside the libtorch this binary was built against (setup
/// installs torch and torchvision there), else `python3` from the PATH.
pub fn python_path() -> PathBuf {
    if let Some(python) = std::env::var_os(PYTHON_VAR).filter(|p| !p.is_empty()) {
        return PathBuf::from(python);
    }
    venv_python(Path::new(loaderbench_engine::device::LIBTORCH_LIB_DIR))
        .filter(|python| python.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// `<venv>/bin/python` for a libtorch at `<venv>/lib/python3.X/site-packages/torch/lib`.
fn venv_python(libtorch_lib: &Path) -> Option<PathBuf> {
    let root = libtorch_lib.ancestors().nth(5)?;
    Some(root.join("bin").join("python"))
}

/// What a reader thread saw.
pub enum Line {
    Text(String),
    /// stdout closed: the process ended or is about to.
    Closed,
}

/// A running script. Dropping it kills the process and its workers and reaps it.
pub struct PythonProcess {
    child: Child,
    /// Held open: the script takes the end of its stdin as loaderbench being gone.
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl PythonProcess {
    /// The script's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `python script` with `temp` as its temporary directory and writes
    /// `request` as its first stdin line.
    pub fn start(
        python: &Path,
        script: &Path,
        temp: &Path,
        request: &str,
    ) -> Result<PythonProcess> {
        let mut command = Command::new(python);
        command
            .arg(script)
            .env("TMPDIR", temp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let mut child = loaderbench_engine::child_processes::spawn_tied(command)
            .map_err(|err| start_error(python, &err))?;
        let (sender, lines) = unbounded();
        if let Some(stdout) = child.stdout.take() {
            std::thread::Builder::new()
                .name("pytorch-stdout".to_owned())
                .spawn(move || {
                    for line in lossy_lines(stdout) {
                        let _ = sender.send(Line::Text(line));
                    }
                    let _ = sender.send(Line::Closed);
                })
                .map_err(|err| Error::run(format!("cannot start a reader thread: {err}")))?;
        }
        let stderr = match child.stderr.take() {
            Some(pipe) => collect_tail(pipe),
            None => Arc::default(),
        };
        let mut process = PythonProcess {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        };
        process.send(request)?;
        Ok(process)
    }

    /// Writes `line` to the script's stdin.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::run("the PyTorch runtime's script has no stdin"))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|err| Error::run(format!("cannot send the request to Python: {err}")))
    }

    /// The script's stdout lines, as they come; a disconnected channel means closed too.
    pub fn lines(&self) -> &Receiver<Line> {
        &self.lines
    }

    /// How the process ended, if it does within `grace`; `None` while it runs on.
    pub fn exit_status(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return None,
            }
        }
    }

    /// The last line the script wrote to stderr (Python's traceback ends with the error).
    pub fn last_stderr_line(&self) -> Option<String> {
        // A poisoned lock only means a reader thread panicked; its lines are still there.
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().rev().find(|l| !l.trim().is_empty()).cloned()
    }

    /// Kills the process and everything in its group, then reaps it.
    pub fn kill(&mut self) {
        kill_group(&mut self.child);
        self.stdin = None;
        let _ = self.child.wait();
    }

    /// Waits up to `wait` for the stderr reader to see the end of the pipe, so that the
    /// last stderr line is complete.
    pub fn settle_stderr(&self, wait: Duration) {
        let deadline = std::time::Instant::now() + wait;
        while Arc::strong_count(&self.stderr) > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for PythonProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to the child's process group (the child is its leader and not yet reaped,
/// so the group id cannot have been reused); elsewhere, the child alone.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        // A group that is already gone is ESRCH, which changes nothing.
        let group = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
}

fn start_error(python: &Path, err: &std::io::Error) -> Error {
    let problem = if err.kind() == std::io::ErrorKind::NotFound {
        format!(
            "not found; the PyTorch runtime needs a Python with torch and torchvision \
             (run scripts/setup, set {PYTHON_VAR}, or name one in the preset's `python` field)"
        )
    } else {
        format!("cannot run it: {err}")
    };
    Error::file(python, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_venv_python_is_five_levels_above_torch_lib() {
        let lib = Path::new("/cache/torch-cpu/lib/python3.11/site-packages/torch/lib");
        assert_eq!(
            venv_python(lib),
            Some(PathBuf::from("/cache/torch-cpu/bin/python"))
        );
        assert_eq!(venv_python(Path::new("torch/lib")), None);
    }
}
