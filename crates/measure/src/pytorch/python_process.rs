//! A script's Python process: which interpreter runs the script, starting it in its
//! own process group (so its DataLoader workers can be killed with it) with a temporary
//! directory of the run's own (`TMPDIR`, removed with the run) or having the run's
//! preloaded Python fork it, reading its stdout and stderr on threads (so a silent or
//! chatty child never blocks us), and killing the whole group when it is dropped.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, unbounded};

use loaderbench_engine::child_processes::{collect_tail, kill_group, lossy_lines};
use loaderbench_engine::error::{Error, Result};

#[cfg(unix)]
use super::preloaded::PreloadedPython;

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

/// How a script's process came to be, and so how it is waited for and killed.
enum Leader {
    /// Started by us: our child.
    Started(Child),
    /// Forked by the run's preloaded Python, whose child it is; adopted into the run,
    /// since a shared preloaded Python is below no process of the run.
    #[cfg(unix)]
    Forked {
        pid: u32,
        preloaded: Arc<PreloadedPython>,
        _adopted: crate::meter::Adopted,
    },
}

/// A running script. Dropping it kills the process and its workers and reaps it.
pub struct PythonProcess {
    leader: Leader,
    /// Held open: the script takes the end of its stdin as loaderbench being gone.
    stdin: Option<Box<dyn Write + Send>>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Killed and reaped (or released to the preloaded Python, which reaps it): its pid
    /// and group id may since be another process's.
    ended: bool,
}

impl PythonProcess {
    /// The script's process id.
    pub fn pid(&self) -> u32 {
        match &self.leader {
            Leader::Started(child) => child.id(),
            #[cfg(unix)]
            Leader::Forked { pid, .. } => *pid,
        }
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
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            kill_group(&mut child);
            let _ = child.wait();
            return Err(Error::run("the PyTorch runtime's script has no pipes"));
        };
        PythonProcess::attach(Leader::Started(child), stdin, stdout, stderr, request)
    }

    /// Has `preloaded` fork a script with `temp` as its temporary directory and writes
    /// `request` as its first stdin line; `None` when the preloaded Python has ended.
    #[cfg(unix)]
    pub fn fork(
        preloaded: &Arc<PreloadedPython>,
        temp: &Path,
        request: &str,
    ) -> Result<Option<PythonProcess>> {
        let Some((pid, pipes)) = preloaded.fork(temp)? else {
            return Ok(None);
        };
        let leader = Leader::Forked {
            pid,
            preloaded: preloaded.clone(),
            _adopted: crate::meter::Adopted::new(pid),
        };
        PythonProcess::attach(leader, pipes.stdin, pipes.stdout, pipes.stderr, request).map(Some)
    }

    /// Reads the script's stdout and stderr on threads and sends `request`.
    fn attach(
        leader: Leader,
        stdin: impl Write + Send + 'static,
        stdout: impl Read + Send + 'static,
        stderr: impl Read + Send + 'static,
        request: &str,
    ) -> Result<PythonProcess> {
        let (sender, lines) = unbounded();
        let mut process = PythonProcess {
            leader,
            stdin: Some(Box::new(stdin)),
            lines,
            stderr: collect_tail(stderr),
            ended: false,
        };
        std::thread::Builder::new()
            .name("pytorch-stdout".to_owned())
            .spawn(move || {
                for line in lossy_lines(stdout) {
                    let _ = sender.send(Line::Text(line));
                }
                let _ = sender.send(Line::Closed);
            })
            .map_err(|err| Error::run(format!("cannot start a reader thread: {err}")))?;
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
        let child = match &mut self.leader {
            Leader::Started(child) => child,
            #[cfg(unix)]
            Leader::Forked { pid, preloaded, .. } => return preloaded.exit_status(*pid, grace),
        };
        let deadline = std::time::Instant::now() + grace;
        loop {
            match child.try_wait() {
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

    /// Kills the process and everything in its group, then reaps it; once.
    pub fn kill(&mut self) {
        self.stdin = None;
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        match &mut self.leader {
            Leader::Started(child) => {
                kill_group(child);
                let _ = child.wait();
            }
            #[cfg(unix)]
            Leader::Forked { pid, preloaded, .. } => preloaded.release(*pid),
        }
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
