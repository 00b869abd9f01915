//! The setup panel's check of a shard pattern, off the frame: listing the shards a
//! pattern names (counted against `dataset.limits.shards` first, then globbed and looked
//! for on disk) can take long for a large folder, so it runs on a thread of its own, once
//! per edit of the pattern or the cap, and the panel shows its answer when it comes (the
//! thread asks for a repaint). An answer to an edit since replaced is dropped.

use crossbeam_channel::{Receiver, bounded};

use loaderbench_engine::dataset::{ShardLocation, shard_locations};

/// The last check started and its answer.
#[derive(Debug, Clone, Default)]
pub struct ShardCheck {
    /// The pattern and the cap the last check was started for.
    checked: Option<(String, u64)>,
    /// Its answer once it came: the pattern's problem, if any.
    answer: Option<String>,
    pending: Option<Receiver<Option<String>>>,
}

impl ShardCheck {
    /// The problem with `pattern` under the cap `max_shards`, as far as known: starts a
    /// check when either changed since the last one, and gives its answer once it came
    /// (nothing while it runs).
    pub fn problem(
        &mut self,
        ctx: &egui::Context,
        pattern: &str,
        max_shards: u64,
    ) -> Option<String> {
        let asked = (pattern.to_owned(), max_shards);
        if self.checked.as_ref() != Some(&asked) {
            self.start(ctx, asked);
        }
        if let Some(answer) = self
            .pending
            .as_ref()
            .and_then(|pending| pending.try_recv().ok())
        {
            self.answer = answer;
            self.pending = None;
        }
        self.answer.clone()
    }

    fn start(&mut self, ctx: &egui::Context, asked: (String, u64)) {
        let (sender, answer) = bounded(1);
        let (pattern, max_shards) = asked.clone();
        let ctx = ctx.clone();
        let check = move || {
            let problem = shard_pattern_error(&pattern, max_shards);
            // The receiver gone means the pattern was edited since.
            if sender.send(problem).is_ok() {
                ctx.request_repaint();
            }
        };
        self.answer = None;
        self.pending = None;
        self.checked = Some(asked);
        match std::thread::Builder::new()
            .name("loaderbench-shard-check".to_owned())
            .spawn(check)
        {
            Ok(_) => self.pending = Some(answer),
            Err(err) => self.answer = Some(format!("cannot check the shards: {err}")),
        }
    }
}

/// A shard pattern that names no shard or too many, or a local shard that does not
/// exist.
fn shard_pattern_error(pattern: &str, max_shards: u64) -> Option<String> {
    match shard_locations(pattern, max_shards) {
        Err(err) => Some(err.to_string()),
        Ok(locations) => locations
            .iter()
            .filter_map(ShardLocation::file)
            .find(|path| !path.exists())
            .map(|path| format!("{} does not exist", path.display())),
    }
}
