//! A real nginx serving a folder on 127.0.0.1 for one test: started as the current user
//! from a config generated in a temporary folder (its pid file, error log and temp paths
//! are there too), one process (`master_process off`) so killing it leaves nothing,
//! on a free port, optionally slowed with nginx's own `limit_rate` (per connection;
//! this machine's kernel has no netem, so a rate is how a slower link is made). Dropping
//! it kills and reaps the server; it also dies with the test thread that started it.
//! Without nginx a test is skipped with a message, except under CI, where it fails.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Where Debian installs nginx.
pub const NGINX: &str = "/usr/sbin/nginx";

/// How long nginx may take to start listening.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A running nginx; killed when dropped.
pub struct Nginx {
    server: Child,
    port: u16,
    dir: TempDir,
}

impl Nginx {
    /// Serves `root` at `http://127.0.0.1:PORT/`, each connection limited to
    /// `bytes_per_s` when given. `None` (with a message) when nginx is not installed and
    /// the tests do not run in CI.
    pub fn serve(root: &Path, bytes_per_s: Option<u64>) -> Option<Nginx> {
        if !Path::new(NGINX).exists() {
            assert!(
                !super::in_ci(),
                "no {NGINX}, and CI must run the HTTP tests"
            );
            eprintln!("skipped: no {NGINX}");
            return None;
        }
        // A free port can be taken by someone else before nginx binds it: try a few.
        let mut last_log = String::new();
        for _ in 0..5 {
            match start(root, bytes_per_s) {
                Ok(nginx) => return Some(nginx),
                Err(log) => last_log = log,
            }
        }
        panic!("nginx did not start: {last_log}");
    }

    /// The URL of `path` (relative to the served folder).
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.server.id()
    }

    /// Kills the server now (a server that goes away) and reaps it.
    pub fn stop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }

    /// Requests served so far (the access log's lines), once the log has stopped
    /// growing: nginx writes a request's line when it finishes the request, which on a
    /// busy machine can come a moment after the client has read what it needed.
    pub fn requests(&self) -> usize {
        let count = || {
            let log = std::fs::read_to_string(self.dir.path().join("access.log"));
            log.unwrap_or_default().lines().count()
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = count();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = count();
            if now == last || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    /// The body bytes sent for each request served so far, in the order they finished
    /// (the access log's `$body_bytes_sent`, the field after the status), once the log
    /// has stopped growing (see [`Nginx::requests`]).
    pub fn bodies_sent(&self) -> Vec<(String, u64)> {
        self.requests();
        let log = std::fs::read_to_string(self.dir.path().join("access.log"));
        let log = log.unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                // `... "GET /path HTTP/1.1" 200 1234 "-" "agent"`
                let mut quoted = line.split('"');
                let request = quoted.nth(1)?;
                let mut after = quoted.next()?.split_whitespace();
                let bytes = after.nth(1)?.parse().ok()?;
                let path = request.split_whitespace().nth(1)?.to_owned();
                Some((path, bytes))
            })
            .collect()
    }

    /// What nginx wrote to its error log.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts nginx on a port that was free a moment ago, waiting until it accepts
/// connections; on failure, what its error log says.
fn start(root: &Path, bytes_per_s: Option<u64>) -> Result<Nginx, String> {
    let dir = TempDir::new().map_err(|err| err.to_string())?;
    let port = free_port();
    let config = dir.path().join("nginx.conf");
    std::fs::write(&config, config_text(dir.path(), root, port, bytes_per_s))
        .map_err(|err| err.to_string())?;
    let mut command = Command::new(NGINX);
    command
        .arg("-p")
        .arg(dir.path())
        .arg("-e")
        .arg(dir.path().join("error.log"))
        .arg("-c")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent; it only
    // asks the kernel to kill nginx if the thread that started it ends first.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let server = command.spawn().map_err(|err| err.to_string())?;
    let mut nginx = Nginx { server, port, dir };
    let deadline = Instant::now() + START_LIMIT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = nginx.server.try_wait() {
            return Err(nginx.error_log());
        }
        if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(nginx);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!(
        "not listening after {START_LIMIT:?}: {}",
        nginx.error_log()
    ))
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    listener.local_addr().expect("a bound address").port()
}

/// nginx's config: one process in the foreground, everything it writes in `dir`.
fn config_text(dir: &Path, root: &Path, port: u16, bytes_per_s: Option<u64>) -> String {
    let dir = dir.display();
    let rate = bytes_per_s.map_or_else(String::new, |rate| format!("limit_rate {rate};"));
    format!(
        "daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    default_type application/octet-stream;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ {rate} }}
    }}
}}
",
        root = root.display()
    )
}

/// The body of `GET url` over a plain connection (HTTP/1.0, so the server closes it),
/// with the status line, for the harness's own test.
pub fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(host).expect("nginx accepts");
    std::io::Write::write_all(
        &mut stream,
        format!("GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes(),
    )
    .expect("the request is sent");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("the response is read");
    response
}
