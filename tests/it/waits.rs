//! Every wait ends, and nothing a preset names is expanded before it is counted: a brace
//! pattern naming more shards than `dataset.limits.shards` is refused quickly by the CLI
//! as a process under a memory limit, an HTTP shard that trickles is an error naming the
//! shard and its server, and cancel (Ctrl-C in the CLI) reaches a dataset while it
//! opens.

use crate::common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, DatasetKind, DatasetSpec};
use loaderbench_engine::error::Error;

use common::{assert_error_line, loaderbench_command, run_args, run_with_deadline};

/// Address space the CLI may take when it refuses a pattern: enough for libtorch, far
/// below what 10^8 shard names take.
const REFUSAL_ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// `loaderbench run seed-light -q` on the shards `pattern` names, with `extra` arguments.
fn shards_run(pattern: &str, extra: &[&str]) -> Command {
    let path = format!("dataset.path={pattern}");
    loaderbench_command(&run_args(
        "seed-light",
        &["dataset.kind=shards", &path],
        extra,
    ))
}

/// `loaderbench run seed-light` with a shard `pattern`, under
/// [`REFUSAL_ADDRESS_SPACE_BYTES`] and a generous time limit.
fn run_with_pattern(pattern: &str) -> Output {
    let mut command = shards_run(pattern, &[]);
    common::process::limit_address_space(&mut command, REFUSAL_ADDRESS_SPACE_BYTES);
    run_with_deadline(&mut command, Duration::from_secs(60))
}

#[test]
fn a_brace_pattern_over_the_shard_cap_is_refused_before_it_is_expanded() {
    let dir = tempfile::TempDir::new().unwrap();
    let pattern = format!("{}/s-{{0..99999999}}.tar", dir.path().display());
    assert_error_line(
        &run_with_pattern(&pattern),
        2,
        &[
            &pattern,
            "the number of shards dataset.path names is 100000000, over the limit of 100000",
            "dataset.limits.shards",
        ],
    );
    let pattern = format!("{}/s-{{0..18446744073709551615}}.tar", dir.path().display());
    assert_error_line(
        &run_with_pattern(&pattern),
        2,
        &[
            &pattern,
            "over the limit of 100000",
            "dataset.limits.shards",
        ],
    );
}

/// How a test server answers each GET.
#[derive(Clone, Copy)]
enum Answer {
    /// Never: it reads the request and says nothing.
    Silence,
    /// A 200 for a 1 MiB body, of which it sends one byte every 20 ms.
    Trickle,
}

/// A server on 127.0.0.1 that answers every connection as `answer` says, on threads of
/// its own that end when the client goes.
struct Server {
    address: String,
    /// The requests it has read whole so far.
    requests: Arc<AtomicUsize>,
}

impl Server {
    fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let counted = counted.clone();
                std::thread::spawn(move || respond(client, answer, &counted));
            }
        });
        Server { address, requests }
    }

    /// Waits until a client has sent a request whole: from then on it waits on this
    /// server's answer.
    fn wait_for_a_request(&self) {
        common::wait_until(Duration::from_secs(60), "a request to the server", || {
            self.requests.load(Ordering::SeqCst) > 0
        });
    }
}

fn respond(mut client: TcpStream, answer: Answer, requests: &AtomicUsize) {
    let mut request = Vec::new();
    let mut byte = [0u8];
    while !request.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        request.push(byte[0]);
    }
    requests.fetch_add(1, Ordering::SeqCst);
    match answer {
        Answer::Silence => {
            // Until the client closes the connection.
            while client.read(&mut byte).unwrap_or(0) > 0 {}
        }
        Answer::Trickle => {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n";
            if client.write_all(head.as_bytes()).is_err() {
                return;
            }
            while client.write_all(&[0]).is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[test]
fn an_http_shard_that_trickles_is_an_error_naming_it_and_its_server() {
    let server = Server::start(Answer::Trickle).address;
    let url = format!("http://{server}/s-0.tar");
    let mut command = shards_run(&url, &["--set", "dataset.limits.http_stall_s=1"]);
    assert_error_line(
        &run_with_deadline(&mut command, Duration::from_secs(60)),
        2,
        &[
            &url,
            &format!("the server {server} stalled"),
            "fewer than 65536",
            "dataset.limits.http_stall_s",
        ],
    );
}

#[test]
fn cancel_reaches_a_dataset_opening_over_http_within_a_second() {
    // A cancel the moment the request arrives (while the client waits for the answer,
    // or, on the trickling server, as it starts on the body: read_to_end once took that
    // cancel as "try again" for ever), and one half a second into the wait on the body.
    for pause in [Duration::ZERO, Duration::from_millis(500)] {
        for answer in [Answer::Silence, Answer::Trickle] {
            let server = Server::start(answer);
            let spec = DatasetSpec {
                kind: DatasetKind::Shards,
                path: Some(format!("http://{}/s-{{0..3}}.tar", server.address).into()),
                ..DatasetSpec::default()
            };
            let cancel = CancelToken::new();
            let opening = {
                let cancel = cancel.clone();
                std::thread::spawn(move || {
                    dataset::open_with_progress(&spec, None, &mut |_| {}, &cancel).map(|_| ())
                })
            };
            server.wait_for_a_request();
            std::thread::sleep(pause);
            let cancelled = Instant::now();
            cancel.cancel();
            common::wait_until(
                Duration::from_secs(5),
                "the open to end after the cancel",
                || opening.is_finished(),
            );
            let waited = cancelled.elapsed();
            let opened = opening.join().unwrap();
            assert!(matches!(opened, Err(Error::Cancelled)), "{opened:?}");
            assert!(waited < Duration::from_millis(1500), "{waited:?}");
        }
    }
}

#[test]
fn ctrl_c_ends_a_run_whose_dataset_waits_on_a_silent_server() {
    let server = Server::start(Answer::Silence);
    let dir = tempfile::TempDir::new().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let pattern = format!("http://{}/s-{{0..3}}.tar", server.address);
    let mut command = shards_run(&pattern, &["--journal", journal.to_str().unwrap()]);
    command.stdout(Stdio::null()).process_group(0);
    let child = command.spawn().unwrap();
    server.wait_for_a_request();
    let group = libc::pid_t::try_from(child.id()).unwrap();
    let interrupted = Instant::now();
    // SAFETY: kill takes a process group id and a signal number; no pointers.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGINT) }, 0);
    let output = common::wait_with_deadline(child, Duration::from_secs(20));
    let waited = interrupted.elapsed();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        common::stderr(&output)
    );
    assert!(waited < Duration::from_secs(5), "Ctrl-C took {waited:?}");
}
