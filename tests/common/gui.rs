//! Helpers the GUI tests share: the app on saved runs or on a preset file (its run
//! started), typing into a field by its label, stepping a harness until the app is in a
//! state or its run has ended, and the Xvfb display the real-window
//! tests run on (missing, it fails them in CI and skips them elsewhere).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, HarnessBuilder, LazyRenderer};
use loaderbench_gui::{App, Launch};

/// A harness builder whose screenshots (the app's PNG exports) render offscreen, as
/// `report --png` does; the OpenGL context is made at the first screenshot.
pub fn builder() -> HarnessBuilder<App> {
    Harness::builder().renderer(LazyRenderer::new(|| {
        loaderbench_gui::OffscreenGl::new().expect("an offscreen OpenGL context (EGL)")
    }))
}

/// The app of `size` showing the saved runs `results` (several are plotted together),
/// with journals in `dir`, after its first frames.
pub fn app_on_saved_runs(
    dir: &Path,
    results: Vec<PathBuf>,
    size: [f32; 2],
) -> Harness<'static, App> {
    let launch = Launch {
        results,
        journal_dir: Some(dir.to_path_buf()),
        ..Launch::default()
    };
    let mut harness = builder()
        .with_size(size)
        .build_eframe(move |cc| App::new(cc, launch));
    harness.run_steps(3);
    harness
}

/// The app of `size` on the preset file `preset`, with journals in `dir`, measuring with
/// this build's `loaderbench`.
pub fn app_on_preset(dir: &Path, preset: &Path, size: [f32; 2]) -> Harness<'static, App> {
    let launch = Launch {
        preset: Some(preset.display().to_string()),
        run_now: false,
        journal_dir: Some(dir.to_path_buf()),
        measurer: Some(env!("CARGO_BIN_EXE_loaderbench").into()),
        ..Launch::default()
    };
    builder()
        .with_size(size)
        .build_eframe(move |cc| App::new(cc, launch))
}

/// [`app_on_preset`] with Ctrl+R pressed and one frame stepped: the run started.
pub fn app_running(dir: &Path, preset: &Path, size: [f32; 2]) -> Harness<'static, App> {
    let mut harness = app_on_preset(dir, preset, size);
    start_the_run(&mut harness);
    harness
}

/// Presses Ctrl+R and steps one frame.
pub fn start_the_run(harness: &mut Harness<'_, App>) {
    harness.key_press_modifiers(Modifiers::COMMAND, Key::R);
    harness.step();
}

/// Clicks what is labelled `label` and steps two frames.
pub fn click(harness: &mut Harness<'_, App>, label: &str) {
    harness.get_by_label(label).click();
    harness.run_steps(2);
}

/// Picks `choice` in the menu labelled `label`.
pub fn choose(harness: &mut Harness<'_, App>, label: &str, choice: &str) {
    harness.get_by_role_and_label(Role::ComboBox, label).click();
    harness.run_steps(2);
    click(harness, choice);
}

/// Picks `baseline` (a saved baseline, or an open run) in the analysis' baselines
/// list: the run is compared with it.
pub fn pick_baseline(harness: &mut Harness<'_, App>, baseline: &str) {
    click(harness, "baselines");
    harness
        .get_by_role_and_label(Role::Button, baseline)
        .click();
    harness.run_steps(2);
}

/// Replaces the text of the one-line text field labelled `label`.
pub fn type_into(harness: &mut Harness<'_, App>, label: &str, text: &str) {
    type_into_role(harness, Role::TextInput, label, text);
}

/// Replaces the text of the field of `role` (one line or several, a spin button)
/// labelled `label`; empty `text` clears it.
pub fn type_into_role(harness: &mut Harness<'_, App>, role: Role, label: &str, text: &str) {
    harness.get_by_role_and_label(role, label).focus();
    harness.run_steps(2);
    harness.key_press_modifiers(Modifiers::COMMAND, Key::A);
    if text.is_empty() {
        harness.key_press(Key::Backspace);
    } else {
        harness.get_by_role_and_label(role, label).type_text(text);
    }
    harness.run_steps(2);
}

/// Steps the harness until `done` holds, failing after `limit`.
pub fn step_until(harness: &mut Harness<'_, App>, limit: Duration, done: impl Fn(&App) -> bool) {
    let reached = super::poll(limit, || {
        if done(harness.state()) {
            return Some(());
        }
        harness.step();
        None
    });
    assert!(
        reached.is_some(),
        "timed out; messages: {:?}",
        harness.state().messages()
    );
    harness.run_steps(2);
}

/// Steps the harness until its run or tune has ended, failing after `limit`.
pub fn step_until_ended(harness: &mut Harness<'_, App>, limit: Duration) {
    step_until(harness, limit, |app| !app.is_running());
}

/// An Xvfb display started for one test, stopped when dropped.
pub struct Xvfb {
    pub display: String,
    server: std::process::Child,
}

/// How long Xvfb gets to end on SIGTERM before it is killed.
const XVFB_GRACE: Duration = Duration::from_secs(5);

impl Xvfb {
    /// Ends the server with SIGTERM, on which it removes its lock file and socket from
    /// /tmp (`.X<n>-lock`, `.X11-unix/X<n>`), which SIGKILL leaves; killed only if it
    /// has not ended within [`XVFB_GRACE`].
    pub fn stop(&mut self) {
        if matches!(self.server.try_wait(), Ok(None))
            && let Ok(pid) = i32::try_from(self.server.id())
        {
            // SAFETY: kill sends a signal and touches no memory; the server is our
            // child and not yet reaped (try_wait said so), so `pid` is still its own.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            // Still running after the grace, it is killed below.
            super::poll(XVFB_GRACE, || {
                (!matches!(self.server.try_wait(), Ok(None))).then_some(())
            });
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts Xvfb on a display number of its own (by process and by call, so tests of one
/// binary can each have one at once); `None` when it is not installed.
pub fn start_xvfb() -> Option<Xvfb> {
    static STARTED: AtomicU32 = AtomicU32::new(0);
    let call = STARTED.fetch_add(1, Ordering::Relaxed) % 8;
    let number = 100 + std::process::id() % 1000 * 8 + call;
    let display = format!(":{number}");
    let server = std::process::Command::new("Xvfb")
        .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let socket = format!("/tmp/.X11-unix/X{number}");
    // Without its socket in time, the test that needs it fails on the display.
    super::poll(Duration::from_secs(10), || {
        std::path::Path::new(&socket).exists().then_some(())
    });
    Some(Xvfb { display, server })
}

/// The display for a real-window test. Without Xvfb the test cannot run its window: in
/// CI (`CI` set, and not to `false` or `0`) that fails the test, since CI installs Xvfb
/// and must check the window; elsewhere the test says it is skipped and gets `None`.
pub fn xvfb_or_skip() -> Option<Xvfb> {
    let xvfb = start_xvfb();
    if xvfb.is_none() {
        assert!(
            !super::in_ci(),
            "no Xvfb on PATH, and CI must run the real-window tests"
        );
        eprintln!("skipped: no Xvfb on PATH");
    }
    xvfb
}

/// Runs `loaderbench gui PRESET --run --exit --json JSON` (journals in `dir`) in a window
/// on a display of its own, failing after `limit`; `None` when the test is skipped for
/// want of Xvfb (see [`xvfb_or_skip`]). Its data folder (`XDG_DATA_HOME`, where the app
/// would remember its state) is `dir`'s [`DATA_HOME`], never the user's.
pub fn run_in_window(preset: &Path, json: &Path, dir: &Path, limit: Duration) -> Option<Output> {
    let mut xvfb = xvfb_or_skip()?;
    let output = super::run_with_deadline(
        super::loaderbench_command(&[
            "gui",
            super::path_str(preset),
            "--run",
            "--exit",
            "--json",
            super::path_str(json),
            "--journal-dir",
            super::path_str(dir),
        ])
        .env("DISPLAY", &xvfb.display)
        .env("XDG_DATA_HOME", dir.join(DATA_HOME)),
        limit,
    );
    xvfb.stop();
    Some(output)
}

/// The folder below a test's own folder that [`run_in_window`] gives the app as its
/// `XDG_DATA_HOME`.
pub const DATA_HOME: &str = "data-home";
