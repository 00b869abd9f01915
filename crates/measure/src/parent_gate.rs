//! The gate a process passes on to its parent: a process that measures in children of
//! its own and reports its events to the app on stdout (`loaderbench resolve --events`
//! and `tune --events`) writes `gate` among those events when one of its children
//! waits before an epoch, and lets the child go on at the app's `go` on stdin, at most
//! [`GATE_LIMIT`] later, so that the window draws between epochs, as it does for a run
//! measured in its own child ([`crate::measuring_child`]).

use std::io::Write;

use crossbeam_channel::{Receiver, bounded};

use crate::measuring_child::{AT_GATE, GATE_LIMIT, listen_to_parent};

/// Passes the gates of this process's measuring children on to its parent; once
/// stdin has closed (or said `cancel`) it waits no more.
pub struct ParentGate {
    go: Receiver<()>,
}

impl ParentGate {
    /// Starts listening on stdin for the parent's `go`.
    pub fn listen() -> ParentGate {
        let (go_tx, go) = bounded::<()>(1);
        let listen = move || listen_to_parent(&go_tx);
        // Without the thread the sender is gone, and the gate never waits.
        let _ = std::thread::Builder::new()
            .name("loaderbench-parent-gate".to_owned())
            .spawn(listen);
        ParentGate { go }
    }

    /// Tells the parent an epoch is about to start and waits for its `go`.
    pub fn wait(&self) {
        // A `go` that came after an earlier gate gave up waiting is not this gate's.
        while self.go.try_recv().is_ok() {}
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{AT_GATE}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return;
        }
        drop(stdout);
        let _ = self.go.recv_timeout(GATE_LIMIT);
    }
}
