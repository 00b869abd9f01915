//! Work that must not block a frame: file dialogs (rfd, which waits for the user), PNG
//! encoding and file writes, and the renderer's screenshot callback. Each runs on its
//! own thread or callback and answers with a [`Reply`] over one channel, which the app
//! drains at the top of the next frame; each reply also requests a repaint.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, unbounded};
use egui::ColorImage;

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::error::Error;

use super::actions::Pick;

/// An answer from background work.
pub enum Reply {
    /// A file dialog closed; `None` when the user cancelled it.
    Picked(Pick, Option<PathBuf>),
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

    /// Opens a file dialog on its own thread, starting in `start`'s directory.
    pub fn pick(&self, pick: Pick, start: Option<PathBuf>) {
        let reply = self.replier();
        let spawned = std::thread::Builder::new()
            .name("loaderbench-dialog".to_owned())
            .spawn(move || reply(Reply::Picked(pick, show_dialog(pick, start))));
        if spawned.is_err() {
            (self.replier())(Reply::Picked(pick, None));
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
                    std::fs::write(&path, bytes)
                        .map(|()| path.clone())
                        .map_err(|err| Error::io(&path, err))
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

fn show_dialog(pick: Pick, start: Option<PathBuf>) -> Option<PathBuf> {
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
}
