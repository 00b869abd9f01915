//! The app's keyboard commands, each with its shortcut defined once (as rerun's
//! `UICommand`): the key the app listens for and the text its buttons and hints show
//! come from the same [`Command::shortcut`], written as the platform writes it
//! (`Ctrl+R`, or `⌘R` on macOS) by `egui::Context::format_shortcut`.

use egui::{Key, KeyboardShortcut, Modifiers};

/// A command with a keyboard shortcut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Run the preset.
    Run,
    /// Export the plots as a PNG.
    ExportPlots,
    /// Save the preset (to its file, or as a new one).
    SavePreset,
}

impl Command {
    /// Every command with a shortcut.
    pub const ALL: [Command; 3] = [Command::Run, Command::ExportPlots, Command::SavePreset];

    /// Its keyboard shortcut.
    pub fn shortcut(self) -> KeyboardShortcut {
        let key = match self {
            Command::Run => Key::R,
            Command::ExportPlots => Key::E,
            Command::SavePreset => Key::S,
        };
        KeyboardShortcut::new(Modifiers::COMMAND, key)
    }

    /// Its shortcut as this platform writes it.
    pub fn shortcut_text(self, ctx: &egui::Context) -> String {
        ctx.format_shortcut(&self.shortcut())
    }
}
