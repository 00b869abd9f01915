//! Where a shard's bytes come from, as one sequential stream from its start: a local file
//! read with positioned reads through a buffer of our own ([`PositionedFile`]: no file
//! offset is shared, so a forked worker never moves its parent's), or one HTTP GET whose
//! body streams on an [`Agent`]'s kept-alive connection. A [`ShardStream`] only moves
//! forward: it skips by reading, never seeks and never asks for a range.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use ureq::Agent;

use base64::prelude::{BASE64_STANDARD, Engine as _};

use super::pattern::ShardLocation;
use crate::error::Result;
use crate::secrets;

/// The bytes a [`PositionedFile`] reads at once: large enough that the kernel sees a
/// sequential reader.
const BUFFER_BYTES: usize = 256 * 1024;

/// How long an HTTP server may take to connect, to answer, or between two reads.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

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
/// index pass's); HTTP error statuses are answers to report, not transport errors.
pub fn agent() -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(HTTP_TIMEOUT))
        .timeout_recv_response(Some(HTTP_TIMEOUT))
        .timeout_per_read(Some(HTTP_TIMEOUT))
        .build()
        .into()
}

/// The body of `GET url`, streaming; an error status or a failed request is an error
/// naming the URL.
pub fn get(url: &str, agent: &Agent) -> Result<impl Read + Send + 'static> {
    let location = ShardLocation::Url(url.to_owned());
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
    Ok(response.into_body().into_reader())
}

/// A shard read from its start, front to back.
pub struct ShardStream {
    reader: Box<dyn Read + Send>,
    position: u64,
}

impl ShardStream {
    /// Opens `location` (a URL through `agent`).
    pub fn open(location: &ShardLocation, agent: &Agent) -> Result<Self> {
        let reader: Box<dyn Read + Send> = match location {
            ShardLocation::File(path) => Box::new(
                PositionedFile::open(path)
                    .map_err(|err| location.caused(format!("cannot open: {err}"), err))?,
            ),
            ShardLocation::Url(url) => Box::new(get(url, agent)?),
        };
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
    fn a_stream_skips_forward_and_says_where_it_ended() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, b"0123456789").unwrap();
        let location = ShardLocation::File(path);
        let mut stream = ShardStream::open(&location, &agent()).unwrap();
        let mut out = Vec::new();
        stream.read_at(2, 3, &mut out).unwrap();
        assert_eq!(out, b"234");
        let behind = stream.read_at(0, 1, &mut out).unwrap_err().to_string();
        assert!(behind.contains("behind the stream"), "{behind}");
        let past = stream.read_at(8, 5, &mut out).unwrap_err().to_string();
        assert_eq!(past, "the shard ends at byte 10");
    }
}
