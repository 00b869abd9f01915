//! Work that must not block a frame: file dialogs (`file_dialog`, which waits for the
//! user), PNG encoding and file writes, and the renderer's screenshot callback. Each runs
//! on its own thread or callback and answers with a [`Reply`] over one channel, which the
//! app drains at the top of the next frame; each reply also requests a repaint.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, unbounded};
use egui::ColorImage;

use loaderbench_engine::error::Error;

use super::actions::Pick;
use super::file_dialog;

/// An answer from background work.
pub enum Reply {
    /// A file dialog closed; `None` when the user cancelled it.
    Picked(Pick, Option<PathBuf>),
    /// No file dialog could open, and why.
    NoDialog(String),
    /// The frame the app asked a screenshot of.
    Screenshot(Arc<ColorImage>),
    /// A file was written, or could not be.
    Wrote(Result<PathBuf, Error>),
}

/// Starts background work and collects its replies.
pub struct Background {
    ctx: egui::Context,
    sender: Sender<Reply>,
    replies: Receiver<Reply>,
}

impl Background {
    pub fn new(ctx: egui::Context) -> Background {
        let (sender, replies) = unbounded();
        Background {
            ctx,
            sender,
            replies,
        }
    }

    /// The next reply, if one has arrived.
    pub fn try_next(&self) -> Option<Reply> {
        self.replies.try_recv().ok()
    }

    fn replier(&self) -> impl Fn(Reply) + Send + 'static {
        let sender = self.sender.clone();
        let ctx = self.ctx.clone();
        move |reply| {
            // The app owns the receiver for its whole life; a send can only fail while
            // the app is closing, when nobody needs the reply.
            let _ = sender.send(reply);
            ctx.request_repaint();
        }
    }

    /// Opens a file dialog on its own thread, starting in `start`'s directory; where
    /// none can open, replies why.
    pub fn pick(&self, pick: Pick, start: Option<PathBuf>) {
        if let Some(why) = file_dialog::unavailable_here() {
            (self.replier())(Reply::NoDialog(why));
            return;
        }
        let reply = self.replier();
        let spawned = std::thread::Builder::new()
            .name("loaderbench-dialog".to_owned())
            .spawn(move || reply(Reply::Picked(pick, file_dialog::show(pick, start))));
        if let Err(err) = spawned {
            (self.replier())(Reply::NoDialog(format!(
                "The file dialog could not open: could not start a thread: {err}"
            )));
        }
    }

    /// Asks the renderer for the next frame's pixels.
    pub fn screenshot(&self) {
        let reply = self.replier();
        self.ctx
            .request_screenshot(move |image| reply(Reply::Screenshot(image)));
    }

    /// Produces a file's bytes and writes them on a thread of its own.
    pub fn write(
        &self,
        path: PathBuf,
        bytes: impl FnOnce() -> Result<Vec<u8>, Error> + Send + 'static,
    ) {
        let reply = self.replier();
        let spawned = std::thread::Builder::new()
            .name("loaderbench-export".to_owned())
            .spawn(move || {
                let written = bytes().and_then(|bytes| {
                    loaderbench_engine::atomic_file::write(&path, &bytes).map(|()| path.clone())
                });
                reply(Reply::Wrote(written));
            });
        if let Err(err) = spawned {
            (self.replier())(Reply::Wrote(Err(Error::run_caused(
                format!("could not start a thread: {err}"),
                err,
            ))));
        }
    }
}
