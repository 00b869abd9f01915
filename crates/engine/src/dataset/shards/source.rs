//! Where a shard's bytes come from, as one sequential stream from its start: a local file
//! read with positioned reads through a buffer of our own ([`PositionedFile`]: no file
//! offset is shared, so a forked worker never moves its parent's), or one HTTP GET whose
//! body streams on an [`Http`] client's kept-alive connection. A [`ShardStream`] only
//! moves forward: it skips by reading, never seeks and never asks for a range; a
//! compressed shard's stream is its decompressed tar ([`super::compression`]). Every wait
//! on a server ends: connecting and the answer have a timeout, and the body is read on a
//! thread of its own while the reader waits in short steps, so that a cancel ends the
//! wait within a poll, and a body that gives fewer than [`STALL_MIN_BYTES`] in a stall
//! window of waiting (`dataset.limits.http_stall_s`) is an error naming the shard and
//! its server: a server trickling a byte now and then cannot hold a read forever.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use ureq::{Agent, ResponseExt};

use base64::prelude::{BASE64_STANDARD, Engine as _};

use super::compression::{self, Compression, DecompressClock};
use super::pattern::ShardLocation;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::secrets;

/// The bytes a [`PositionedFile`] reads at once: large enough that the kernel sees a
/// sequential reader.
const BUFFER_BYTES: usize = 256 * 1024;

/// How long an HTTP server may take to connect or to answer.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The bytes a body must give in each stall window of waiting for it (2 KiB/s over the
/// default 30 s, which any link that can carry a dataset gives).
pub const STALL_MIN_BYTES: u64 = 64 * 1024;

/// How often a reader waiting for a body's bytes looks at its cancel token.
const POLL: Duration = Duration::from_millis(100);

/// The bytes the body's thread reads at once, and the reads it may hold unread.
const CHUNK_BYTES: usize = 64 * 1024;
const CHUNKS_AHEAD: usize = 4;

/// The bytes past a shard's last sample read to reach its end, so that its connection
/// can serve the next GET (a tar ends with at least two zero blocks, padded to a record);
/// a stream with more left is dropped, closing its connection.
const DRAIN_BYTES: u64 = 64 * 1024;

/// A file read through `read_at` at a position of its own.
pub struct PositionedFile {
    file: File,
    len: u64,
    position: u64,
    buffer: Vec<u8>,
    /// The file offset of `buffer[0]`, and how much of `buffer` holds file bytes.
    start: u64,
    filled: usize,
}

impl PositionedFile {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(PositionedFile {
            file,
            len,
            position: 0,
            buffer: vec![0; BUFFER_BYTES],
            start: 0,
            filled: 0,
        })
    }

    /// The file's length when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }
}

impl Read for PositionedFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buffered = self.start..self.start + self.filled as u64;
        if !buffered.contains(&self.position) {
            if out.len() >= self.buffer.len() {
                let read = self.file.read_at(out, self.position)?;
                self.position += read as u64;
                return Ok(read);
            }
            self.filled = self.file.read_at(&mut self.buffer, self.position)?;
            self.start = self.position;
            if self.filled == 0 {
                return Ok(0);
            }
        }
        // Within the buffer: the offset is below `filled`, which fits in usize.
        let from = (self.position - self.start) as usize;
        let count = out.len().min(self.filled - from);
        out[..count].copy_from_slice(&self.buffer[from..from + count]);
        self.position += count as u64;
        Ok(count)
    }
}

impl Seek for PositionedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
        };
        self.position = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.position)
    }
}

/// An HTTP client whose connections stay open between GETs (one reader thread's, or the
/// index pass's), with the stall window its bodies are held to and the token that
/// cancels a wait on them; HTTP error statuses are answers to report, not transport
/// errors.
#[derive(Clone)]
pub struct Http {
    agent: Agent,
    /// `None`: no stall check (`dataset.limits.http_stall_s = 0`).
    stall_window: Option<Duration>,
    cancel: CancelToken,
}

impl Http {
    /// A client whose bodies must give [`STALL_MIN_BYTES`] in every `stall_s` seconds
    /// of waiting (0: no check), and whose waits end once `cancel` is cancelled.
    pub fn new(stall_s: u64, cancel: CancelToken) -> Self {
        let stall_window = (stall_s > 0).then(|| Duration::from_secs(stall_s));
        let agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(HTTP_TIMEOUT))
            .timeout_recv_response(Some(HTTP_TIMEOUT))
            // The body's thread gives up after a window without a byte, so that a reader
            // that gave up on it (stalled or cancelled) does not leave it waiting longer.
            .timeout_per_read(stall_window.map(|window| window.max(HTTP_TIMEOUT)))
            .build()
            .into();
        Http {
            agent,
            stall_window,
            cancel,
        }
    }

    /// True once the token this client's waits end on is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The body of `GET url`, streaming; an error status or a failed request is an
    /// error naming the URL. The request and the body are read on a thread of their own,
    /// waited for in steps that end on a cancel.
    pub fn get(&self, url: &str) -> Result<impl Read + Send + 'static> {
        self.cancel.check()?;
        let (answer_sender, answer) = sync_channel(1);
        let (chunk_sender, chunks) = sync_channel(CHUNKS_AHEAD);
        let agent = self.agent.clone();
        let location = ShardLocation::Url(url.to_owned());
        let request = move || {
            let response = match fetch(&agent, &location) {
                Ok(response) => response,
                Err(error) => {
                    let _ = answer_sender.send(Err(error));
                    return;
                }
            };
            // The reader gone means it gave up on this body.
            if answer_sender.send(Ok(server_of(&response))).is_ok() {
                pump(response.into_body().into_reader(), &chunk_sender);
            }
        };
        std::thread::Builder::new()
            .name("loaderbench-http-get".to_owned())
            .spawn(request)
            .map_err(|err| Error::run(format!("cannot start a thread: {err}")))?;
        let server = loop {
            self.cancel.check()?;
            match answer.recv_timeout(POLL) {
                Ok(answer) => break answer?,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::run(format!(
                        "the request for {} ended unanswered",
                        ShardLocation::Url(url.to_owned())
                    )));
                }
            }
        };
        Ok(BodyReader {
            chunks,
            chunk: Vec::new(),
            taken: 0,
            server,
            stall_window: self.stall_window,
            cancel: self.cancel.clone(),
            waited: Duration::ZERO,
            window_bytes: 0,
        })
    }
}

/// The answer to `GET location` (with a login from `~/.netrc` for its host), when it
/// is a success.
fn fetch(agent: &Agent, location: &ShardLocation) -> Result<ureq::http::Response<ureq::Body>> {
    let target = location.target()?;
    let mut request = agent.get(&target);
    if let Some((login, password)) = secrets::netrc_login(&target) {
        let basic = BASE64_STANDARD.encode(format!("{login}:{password}"));
        request = request.header("Authorization", format!("Basic {basic}"));
    }
    let response = request
        .call()
        .map_err(|err| location.caused(format!("cannot fetch: {err}"), err))?;
    let status = response.status();
    if !status.is_success() {
        let reason = status.canonical_reason().unwrap_or("");
        return Err(location.bad(format!("HTTP {} {reason}", status.as_u16())));
    }
    Ok(response)
}

/// The host and port that answered (no user or path: what an error may show).
fn server_of(response: &ureq::http::Response<ureq::Body>) -> String {
    let uri = response.get_uri();
    match (uri.host(), uri.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => "of this URL".to_owned(),
    }
}

/// Sends `body` in chunks until its end (an empty chunk), a read error, or the reader
/// gone.
fn pump(mut body: impl Read, chunks: &SyncSender<io::Result<Vec<u8>>>) {
    loop {
        let mut chunk = vec![0; CHUNK_BYTES];
        let read = body.read(&mut chunk).map(|count| {
            chunk.truncate(count);
            chunk
        });
        let last = !matches!(&read, Ok(chunk) if !chunk.is_empty());
        if chunks.send(read).is_err() || last {
            return;
        }
    }
}

/// A body read on a thread of its own, waited for in steps of [`POLL`], each step
/// looking at the cancel token and at the bytes the stall window has given.
struct BodyReader {
    chunks: Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    taken: usize,
    server: String,
    stall_window: Option<Duration>,
    cancel: CancelToken,
    /// Time spent waiting since the window started, and the bytes it gave.
    waited: Duration,
    window_bytes: u64,
}

impl BodyReader {
    /// The next chunk of the body (empty at its end), waiting for it in steps.
    fn next_chunk(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if self.cancel.is_cancelled() {
                // Not `ErrorKind::Interrupted`, which `read_to_end`, `read_exact` and
                // `io::copy` take as "try again": they would call back here for ever.
                return Err(io::Error::other("cancelled"));
            }
            let started = Instant::now();
            let received = self.chunks.recv_timeout(POLL);
            self.waited += started.elapsed();
            match received {
                Ok(chunk) => {
                    let chunk = chunk?;
                    self.window_bytes += chunk.len() as u64;
                    // Checked here too: a server sending a byte every few milliseconds
                    // never lets a wait reach the poll's timeout.
                    self.check_progress()?;
                    return Ok(chunk);
                }
                Err(RecvTimeoutError::Timeout) => self.check_progress()?,
                Err(RecvTimeoutError::Disconnected) => return Ok(Vec::new()),
            }
        }
    }

    /// An error once a whole stall window of waiting gave fewer than [`STALL_MIN_BYTES`].
    fn check_progress(&mut self) -> io::Result<()> {
        let Some(window) = self.stall_window else {
            return Ok(());
        };
        if self.waited < window {
            return Ok(());
        }
        if self.window_bytes < STALL_MIN_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the server {} stalled: it sent {} bytes in {} s, fewer than {} \
                     (raise dataset.limits.http_stall_s for a slower link; see docs/limits.md)",
                    self.server,
                    self.window_bytes,
                    window.as_secs(),
                    STALL_MIN_BYTES
                ),
            ));
        }
        self.waited = Duration::ZERO;
        self.window_bytes = 0;
        Ok(())
    }
}

impl Read for BodyReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.taken == self.chunk.len() {
            self.chunk = self.next_chunk()?;
            self.taken = 0;
        }
        let count = out.len().min(self.chunk.len() - self.taken);
        out[..count].copy_from_slice(&self.chunk[self.taken..self.taken + count]);
        self.taken += count;
        Ok(count)
    }
}

/// A shard's tar read from its start, front to back (decompressed, for a compressed
/// shard).
pub struct ShardStream {
    reader: Box<dyn Read + Send>,
    position: u64,
}

impl ShardStream {
    /// Opens `location` (a URL through `http`), compressed with `compression`, the time
    /// spent decompressing it added to `clock`.
    pub fn open(
        location: &ShardLocation,
        http: &Http,
        compression: Compression,
        clock: &DecompressClock,
    ) -> Result<Self> {
        let raw = open_raw(location, http)?;
        let reader = compression::decompressed(raw, compression, clock)
            .map_err(|err| location.caused(format!("cannot decompress: {err}"), err))?;
        Ok(ShardStream {
            reader,
            position: 0,
        })
    }

    /// Reads the `size` bytes at `offset`, which is at or past the stream's position,
    /// into `out`, skipping what lies between.
    pub fn read_at(&mut self, offset: u64, size: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let gap = offset.checked_sub(self.position).ok_or_else(|| {
            io::Error::other(format!(
                "member at byte {offset} is behind the stream (at byte {})",
                self.position
            ))
        })?;
        let skipped = io::copy(&mut (&mut self.reader).take(gap), &mut io::sink())?;
        self.position += skipped;
        if skipped < gap {
            return Err(ended(self.position));
        }
        out.clear();
        let read = (&mut self.reader).take(size).read_to_end(out)?;
        self.position += read as u64;
        if (read as u64) < size {
            return Err(ended(self.position));
        }
        Ok(())
    }

    /// Reads the little left after the last sample, so that an HTTP connection goes back
    /// to its agent for the next shard; errors are of no interest any more.
    pub fn finish(mut self) {
        let _ = io::copy(&mut (&mut self.reader).take(DRAIN_BYTES), &mut io::sink());
    }
}

/// The bytes of the shard at `location` as stored (a URL through `http`).
pub fn open_raw(location: &ShardLocation, http: &Http) -> Result<Box<dyn Read + Send>> {
    Ok(match location {
        ShardLocation::File(path) => Box::new(
            PositionedFile::open(path)
                .map_err(|err| location.caused(format!("cannot open: {err}"), err))?,
        ),
        ShardLocation::Url(url) => Box::new(http.get(url)?),
    })
}

fn ended(position: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the shard ends at byte {position}"),
    )
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;

    #[test]
    fn positioned_reads_and_seeks_see_the_file_as_a_stream() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("data");
        let bytes: Vec<u8> = (0..BUFFER_BYTES * 2 + 10)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let mut file = PositionedFile::open(&path).unwrap();
        assert_eq!(file.len(), bytes.len() as u64);
        let mut small = [0u8; 5];
        file.read_exact(&mut small).unwrap();
        assert_eq!(small, bytes[..5]);
        file.seek(SeekFrom::Current(BUFFER_BYTES as i64)).unwrap();
        file.read_exact(&mut small).unwrap();
        let at = BUFFER_BYTES + 5;
        assert_eq!(small, bytes[at..at + 5]);
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, bytes[at + 5..]);
        assert!(
            file.seek(SeekFrom::Current(-(bytes.len() as i64) - 1))
                .is_err()
        );
    }

    #[test]
    fn a_cancelled_body_ends_a_read_to_end_instead_of_asking_it_to_retry() {
        let (sender, chunks) = sync_channel(CHUNKS_AHEAD);
        sender.send(Ok(vec![1, 2, 3])).unwrap();
        let cancel = CancelToken::new();
        let mut body = BodyReader {
            chunks,
            chunk: Vec::new(),
            taken: 0,
            server: "127.0.0.1:1".to_owned(),
            stall_window: None,
            cancel: cancel.clone(),
            waited: Duration::ZERO,
            window_bytes: 0,
        };
        let mut first = [0u8; 3];
        body.read_exact(&mut first).unwrap();
        cancel.cancel();
        // On a thread, so that a reader looping on the cancel fails the test rather
        // than hanging it; the sender stays open, as a trickling server's would.
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut rest = Vec::new();
            let _ = done.send(body.read_to_end(&mut rest).map_err(|err| err.to_string()));
        });
        let ended = ended.recv_timeout(Duration::from_secs(5));
        assert_eq!(
            ended,
            Ok(Err("cancelled".to_owned())),
            "read_to_end after a cancel"
        );
        drop(sender);
    }

    #[test]
    fn a_stream_skips_forward_and_says_where_it_ended() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, b"0123456789").unwrap();
        let location = ShardLocation::File(path);
        let http = Http::new(30, CancelToken::new());
        let clock = DecompressClock::default();
        let mut stream = ShardStream::open(&location, &http, Compression::None, &clock).unwrap();
        let mut out = Vec::new();
        stream.read_at(2, 3, &mut out).unwrap();
        assert_eq!(out, b"234");
        let behind = stream.read_at(0, 1, &mut out).unwrap_err().to_string();
        assert!(behind.contains("behind the stream"), "{behind}");
        let past = stream.read_at(8, 5, &mut out).unwrap_err().to_string();
        assert_eq!(past, "the shard ends at byte 10");
    }
}
