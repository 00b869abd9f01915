//! The app's commands with a keyboard shortcut, each defined once (as rerun's
//! `UICommand`): its label, its shortcut and the action it asks for. The key the app
//! listens for and the text its buttons and hints show come from the same entry, the
//! shortcut written as the platform writes it (`Ctrl+R`, or `⌘R` on macOS) by
//! `egui::Context::format_shortcut`.

use egui::{Key, KeyboardShortcut, Modifiers};

use crate::actions::Action;
use loaderbench_present::views::PngArea;

/// A command with a keyboard shortcut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Run the preset.
    Run,
    /// Stop the run or the tune (only while one is going).
    Cancel,
    /// Export the plots as a PNG.
    ExportPlots,
    /// Save the preset (to its file, or as a new one).
    SavePreset,
}

impl Command {
    /// Every command with a shortcut.
    pub const ALL: [Command; 4] = [
        Command::Run,
        Command::Cancel,
        Command::ExportPlots,
        Command::SavePreset,
    ];

    /// The label of its button or menu entry.
    pub fn label(self) -> &'static str {
        match self {
            Command::Run => "Run",
            Command::Cancel => "Cancel",
            Command::ExportPlots => "Plots as PNG",
            Command::SavePreset => "Save",
        }
    }

    /// Its keyboard shortcut.
    pub fn shortcut(self) -> KeyboardShortcut {
        let (modifiers, key) = match self {
            Command::Run => (Modifiers::COMMAND, Key::R),
            Command::Cancel => (Modifiers::NONE, Key::Escape),
            Command::ExportPlots => (Modifiers::COMMAND, Key::E),
            Command::SavePreset => (Modifiers::COMMAND, Key::S),
        };
        KeyboardShortcut::new(modifiers, key)
    }

    /// What it asks the app to do.
    pub fn action(self) -> Action {
        match self {
            Command::Run => Action::StartRun,
            Command::Cancel => Action::CancelRun,
            Command::ExportPlots => Action::ExportPng(PngArea::Plots),
            Command::SavePreset => Action::Save,
        }
    }

    /// Whether its shortcut acts now: Escape stops a run, and is left to the widgets
    /// (closing a menu) when nothing runs.
    pub fn listens(self, running: bool) -> bool {
        self != Command::Cancel || running
    }

    /// Its shortcut as this platform writes it.
    pub fn shortcut_text(self, ctx: &egui::Context) -> String {
        ctx.format_shortcut(&self.shortcut())
    }

    /// Its button: the label with the shortcut beside it.
    pub fn button(self, ctx: &egui::Context) -> egui::Button<'static> {
        egui::Button::new(self.label()).shortcut_text(self.shortcut_text(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each command answers its own shortcut only, so binding them in a loop never lets
    /// one command's key start another.
    #[test]
    fn every_command_has_a_shortcut_of_its_own() {
        for command in Command::ALL {
            let others = Command::ALL.iter().filter(|&&other| other != command);
            for other in others {
                assert_ne!(
                    command.shortcut(),
                    other.shortcut(),
                    "{command:?}, {other:?}"
                );
                assert_ne!(command.label(), other.label());
            }
        }
    }

    #[test]
    fn shortcuts_read_as_the_platform_writes_them() {
        let ctx = crate::context_with_fonts();
        ctx.set_os(egui::os::OperatingSystem::Nix);
        assert_eq!(Command::SavePreset.shortcut_text(&ctx), "Ctrl+S");
        assert_eq!(Command::Cancel.shortcut_text(&ctx), "Escape");
        // macOS: the command key by its symbol where the fonts have it, never "Ctrl".
        ctx.set_os(egui::os::OperatingSystem::Mac);
        let mac = Command::SavePreset.shortcut_text(&ctx);
        assert!(mac.ends_with('S') && !mac.contains("Ctrl"), "{mac}");
    }
}
