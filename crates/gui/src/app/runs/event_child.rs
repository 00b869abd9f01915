//! A child process that reports as JSON lines on its standard output (`loaderbench tune
//! --events`, `loaderbench resolve --events`): started tied to this process, its lines
//! parsed on a thread that wakes the window for each, the tail of its standard error kept
//! for the error it may end with, and stopped as Ctrl-C would stop it in a terminal. The
//! child measures in rounds of its own; before each epoch it writes `gate` and waits for
//! `go`, which the thread sends once the window's [`Pacer`] has let it draw and gone
//! quiet, as for a run measured here, so the window's drawing never competes with a
//! measured epoch.

use std::collections::VecDeque;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, unbounded};
use serde::de::DeserializeOwned;

use loaderbench_engine::child_processes::{collect_tail, lossy_lines, spawn_tied};
use loaderbench_measure::measuring_child::{AT_GATE, GO};

use crate::pacing::Pacer;

/// The exit code of a child stopped by Ctrl-C, which keeps what it measured.
const STOPPED: i32 = 130;

/// How a child ended.
pub(super) struct Ended {
    pub code: Option<i32>,
    /// The error it ended with, where it failed (neither finished nor stopped).
    pub failure: Option<String>,
}

impl Ended {
    pub(super) fn stopped(&self) -> bool {
        self.code == Some(STOPPED)
    }
}

/// A child reporting events of type `E`.
pub(super) struct EventChild<E> {
    child: Option<Child>,
    /// Paces the window while the child measures.
    pub(super) pacer: Pacer,
    /// The child's events; `None` once its standard output closed.
    events: Receiver<Option<E>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    closed: bool,
}

impl<E: DeserializeOwned + Send + 'static> EventChild<E> {
    /// Starts `command` (its pipes set here), naming the reading thread `name`.
    pub(super) fn spawn(
        mut command: Command,
        name: &str,
        ctx: &egui::Context,
    ) -> std::io::Result<EventChild<E>> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_tied(command)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!(
                "the {name} process has no pipes"
            )));
        };
        let (sender, events) = unbounded();
        let wake = ctx.clone();
        let pacer = Pacer::default();
        let (pacing, queued) = (pacer.clone(), events.clone());
        std::thread::Builder::new()
            .name(format!("loaderbench-{name}"))
            .spawn(move || {
                let mut stdin: Option<ChildStdin> = Some(stdin);
                for line in lossy_lines(stdout) {
                    if line == AT_GATE {
                        pacing.settle(&wake, &queued);
                        // A child that no longer listens measures on after its limit.
                        if let Some(pipe) = stdin.as_mut()
                            && writeln!(pipe, "{GO}").and_then(|()| pipe.flush()).is_err()
                        {
                            stdin = None;
                        }
                    } else if let Ok(event) = serde_json::from_str::<E>(&line) {
                        let _ = sender.send(Some(event));
                        wake.request_repaint();
                    }
                }
                pacing.run_ended();
                let _ = sender.send(None);
                wake.request_repaint();
            })?;
        Ok(EventChild {
            child: Some(child),
            pacer,
            events,
            stderr: collect_tail(stderr),
            closed: false,
        })
    }

    pub(super) fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Hands each event that came to `on_event`; once the child's output has closed,
    /// waits for it and says how it ended (once).
    pub(super) fn drain(&mut self, mut on_event: impl FnMut(E)) -> Option<Ended> {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Some(event) => on_event(event),
                None => self.closed = true,
            }
        }
        if !self.closed {
            return None;
        }
        let mut child = self.child.take()?;
        let code = child.wait().ok().and_then(|status| status.code());
        let failure = (!matches!(code, Some(0) | Some(STOPPED))).then(|| {
            let lines = self.stderr.lock().map(|l| l.clone()).unwrap_or_default();
            lines
                .into_iter()
                .rev()
                .find_map(|l| l.strip_prefix("error: ").map(str::to_owned))
                .unwrap_or_else(|| format!("it ended with {code:?}"))
        });
        Some(Ended { code, failure })
    }

    /// Stops the child as Ctrl-C would (SIGINT): it ends its round early and keeps what
    /// it measured. Where there are no signals, it is killed.
    pub(super) fn interrupt(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        #[cfg(unix)]
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill takes a pid and a signal number; no pointers.
            unsafe { libc::kill(pid, libc::SIGINT) };
            return;
        }
        let _ = child.kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A child that waits at a gate hears `go` from the window's side, once it has
    /// passed the pacer, and reports on.
    #[test]
    fn a_gate_is_answered_with_go() {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            r#"echo gate; read answer; echo "{\"answer\": \"$answer\"}""#,
        ]);
        let ctx = egui::Context::default();
        let mut child: EventChild<serde_json::Value> =
            EventChild::spawn(command, "gate-test", &ctx).unwrap();
        let mut answers = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        let ended = loop {
            if let Some(ended) = child.drain(|event| answers.push(event["answer"].clone())) {
                break ended;
            }
            assert!(Instant::now() < deadline, "the child never ended");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(ended.code, Some(0));
        assert_eq!(answers, ["go"]);
        assert_eq!(child.pacer.next_frame_in(), None, "not paced once it ended");
    }
}
