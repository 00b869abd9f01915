//! CPU time of the desktop app's frames in a real window with no GPU, as a user without one
//! meets it: a saved seed-light run (measured by `loaderbench run`) opens in `loaderbench
//! gui FILE` on an Xvfb display, so the window draws through Mesa's software OpenGL
//! renderer (llvmpipe), and once the window is idle the mouse moves 60 times across its
//! plots with `xdotool`. After each move the bench waits until the app is idle again, so
//! everything the move cost is counted: the app's CPU time (user + system, all its threads,
//! Mesa's rasterizer threads included, from /proc) over the 60 moves, divided by the frames
//! the app drew (it writes its count to the file `LOADERBENCH_FRAME_COUNT` names), is the
//! cost of a frame; divided by 60, of a move, which draws several (egui draws again after
//! the pointer moved). Prints each round's figures and their medians. Run with `cargo bench
//! --bench window_frames`; under `cargo test` (no `--bench` argument) it runs one short
//! round on a smaller run, and skips with a message where Xvfb or xdotool is missing,
//! unless `CI` is `true`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loaderbench_gui::FRAME_COUNT_VAR;
use loaderbench_measure::stats;

/// Mouse moves per round.
const MOVES: usize = 60;
/// Rounds in the full benchmark, each 60 moves in the same window.
const ROUNDS: usize = 5;
/// The app counts as idle once its CPU time has not grown for this long.
const IDLE_AFTER: Duration = Duration::from_millis(150);
/// How often the app's CPU time is read while waiting for it to be idle.
const POLL: Duration = Duration::from_millis(10);

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if let Some(missing) = missing_tool() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "window_frames: {missing} is not on PATH (CI needs it: apt-get install xvfb xdotool)"
        );
        println!("window_frames: skipped, {missing} is not on PATH (apt-get install xvfb xdotool)");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let results = saved_run(dir.path(), full);
    let display = Xvfb::start();
    let app = Window::open(&display, &results, dir.path());
    let rounds = if full { ROUNDS } else { 1 };
    let moves = if full { MOVES } else { 10 };
    let (mut per_frame_ms, mut per_move_ms) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (cpu, frames) = app.sweep_mouse(&display, moves);
        assert!(
            frames > 0,
            "the window drew no frame for {moves} mouse moves"
        );
        let ms = cpu.as_secs_f64() * 1000.0;
        println!(
            "round {round}: {moves} moves, {frames} frames ({:.2} a move), {:.1} ms CPU per \
             frame, {:.1} ms per move",
            frames as f64 / moves as f64,
            ms / frames as f64,
            ms / moves as f64
        );
        per_frame_ms.push(ms / frames as f64);
        per_move_ms.push(ms / moves as f64);
    }
    println!(
        "window_frames: {:.1} ms CPU per frame, {:.1} ms per mouse move (medians of {rounds} \
         rounds of {moves} moves)",
        stats::percentile(&per_frame_ms, 50.0).unwrap_or(f64::NAN),
        stats::percentile(&per_move_ms, 50.0).unwrap_or(f64::NAN)
    );
}

/// The first of the tools the bench drives that is not on PATH.
fn missing_tool() -> Option<&'static str> {
    ["Xvfb", "xdotool"].into_iter().find(|tool| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        !std::env::split_paths(&path).any(|dir| dir.join(tool).is_file())
    })
}

/// Measures seed-light with `loaderbench run` (a tenth of its samples for a smoke run)
/// and returns the results JSON it wrote.
fn saved_run(dir: &Path, full: bool) -> PathBuf {
    let json = dir.join("seed-light.json");
    let preset = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/seed-light.ron");
    let samples = if full { "60000" } else { "6000" };
    let output = Command::new(env!("CARGO_BIN_EXE_loaderbench"))
        .arg("run")
        .arg(&preset)
        .args(["--quiet", "--set", &format!("samples={samples}")])
        .arg("--journal")
        .arg(dir.join("seed-light.jsonl"))
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("loaderbench runs");
    assert!(
        output.status.success(),
        "loaderbench run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    json
}

/// An Xvfb server on a display it chose free; killed on drop.
struct Xvfb {
    name: String,
    server: Child,
}

impl Xvfb {
    fn start() -> Xvfb {
        let mut server = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        // Xvfb writes the display it took on `-displayfd` once it accepts clients.
        let stdout = server.stdout.take().expect("Xvfb's piped stdout");
        let mut number = String::new();
        BufReader::new(stdout)
            .read_line(&mut number)
            .expect("Xvfb names its display");
        assert!(!number.trim().is_empty(), "Xvfb exited without a display");
        Xvfb {
            name: format!(":{}", number.trim()),
            server,
        }
    }

    /// `xdotool ARGS` on this display; returns what it printed.
    fn xdotool(&self, args: &[&str]) -> String {
        let output = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.name)
            .output()
            .expect("xdotool runs");
        assert!(output.status.success(), "xdotool {args:?} failed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The app's window showing a saved run; the process is killed on drop.
struct Window {
    app: Child,
    id: String,
    /// Where the app writes how many frames it has drawn (`LOADERBENCH_FRAME_COUNT`).
    frame_count: PathBuf,
}

impl Window {
    /// Opens `results` in `loaderbench gui`, with the app's saved state kept in `dir`
    /// (not the user's), and waits until the window is drawn and idle.
    fn open(display: &Xvfb, results: &Path, dir: &Path) -> Window {
        let frame_count = dir.join("frame-count");
        let app = Command::new(env!("CARGO_BIN_EXE_loaderbench"))
            .arg("gui")
            .arg(results)
            .env("DISPLAY", &display.name)
            .env(FRAME_COUNT_VAR, &frame_count)
            .env("XDG_DATA_HOME", dir)
            .env("XDG_CONFIG_HOME", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("loaderbench gui starts");
        let id = display
            .xdotool(&[
                "search",
                "--sync",
                "--onlyvisible",
                "--name",
                "^loaderbench",
            ])
            .lines()
            .next()
            .expect("the app's window")
            .to_owned();
        let window = Window {
            app,
            id,
            frame_count,
        };
        window.wait_until_idle(Duration::from_secs(60));
        window
    }

    /// Moves the mouse `moves` times along a line across the plots (the right two
    /// thirds of the window, a third of the way down), waiting after each move until the
    /// app is idle; returns the app's CPU time over the moves and the frames it drew.
    fn sweep_mouse(&self, display: &Xvfb, moves: usize) -> (Duration, u64) {
        let (width, height) = self.size(display);
        let y = height / 3;
        let (left, right) = (width * 2 / 5, width - 40);
        let (before, frames_before) = (self.cpu_time(), self.frames());
        for step in 0..moves {
            // Back and forth, so every move lands somewhere new on the plots.
            let along = (step * 2 * (right - left) / moves) % (2 * (right - left));
            let x = left + along.min(2 * (right - left) - along);
            let (x, y) = (x.to_string(), (y + step % 7).to_string());
            display.xdotool(&["mousemove", "--window", &self.id, &x, &y]);
            self.wait_until_idle(Duration::from_secs(5));
        }
        (self.cpu_time() - before, self.frames() - frames_before)
    }

    /// The frames the app has drawn so far, as it last wrote them.
    fn frames(&self) -> u64 {
        let text = std::fs::read_to_string(&self.frame_count)
            .expect("the app writes its frame count (LOADERBENCH_FRAME_COUNT)");
        text.trim().parse().expect("a frame count")
    }

    /// The window's size in pixels.
    fn size(&self, display: &Xvfb) -> (usize, usize) {
        let shell = display.xdotool(&["getwindowgeometry", "--shell", &self.id]);
        let field = |name: &str| {
            shell
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
                .and_then(|value| value.parse().ok())
                .expect("xdotool prints the window's geometry")
        };
        (field("WIDTH"), field("HEIGHT"))
    }

    /// Waits until the app's CPU time stops growing for [`IDLE_AFTER`]; panics after
    /// `limit` (the app is drawing continuously).
    fn wait_until_idle(&self, limit: Duration) {
        let started = Instant::now();
        let mut last = self.cpu_time();
        let mut quiet_since = Instant::now();
        while quiet_since.elapsed() < IDLE_AFTER {
            assert!(
                started.elapsed() < limit,
                "the app did not go idle within {limit:?}"
            );
            std::thread::sleep(POLL);
            let now = self.cpu_time();
            if now != last {
                last = now;
                quiet_since = Instant::now();
            }
        }
    }

    /// The app's CPU time so far: user and system time of all its threads.
    fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.app.id()))
            .expect("the app is still running");
        // The fields after the command name (which may hold spaces, in parentheses):
        // state is field 3, utime 14 and stime 15.
        let fields: Vec<&str> = stat[stat.rfind(')').expect("a stat line") + 2..]
            .split(' ')
            .collect();
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        // SAFETY: sysconf only reads a configuration value.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Duration::from_secs_f64(ticks as f64 / per_second as f64)
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let _ = self.app.kill();
        let _ = self.app.wait();
    }
}
