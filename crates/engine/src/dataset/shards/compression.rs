//! What a shard is compressed with, and the stream that decompresses it. A shard's
//! compression is told by its first bytes (the formats' magic numbers) and checked
//! against its name: `.tar` is a plain tar, `.tar.gz`/`.tgz` gzip, `.tar.bz2`/`.tbz2`/
//! `.tbz` bzip2, `.tar.xz`/`.txz` xz, and a name that says one thing of a shard holding
//! another is an error naming both, never a guess (a name with none of these endings
//! leaves it to the bytes). Those four are what webdataset reads (Python's `tarfile` in
//! its `r|*` stream mode); zstd and lz4, which Python 3.11's `tarfile` cannot read, are
//! refused in one line naming the shard and its compression. A compressed shard is read
//! forward only, through a decoder over its raw stream ([`decompressed`]); the time
//! spent in the decoder, apart from the time it waits on the raw stream, is added to a
//! [`DecompressClock`], so that decompression is reported apart within the fetch.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::pattern::ShardLocation;
use crate::error::Result;

/// The bytes read from a shard's start to tell its compression (bzip2's stream header
/// is the longest).
pub const MAGIC_BYTES: usize = 10;

/// The most memory an xz stream's decoder may take (its dictionary, which the stream's
/// header names): `xz -9` needs 65 MiB; a larger one is made only by hand, and a stream
/// asking for more is an error rather than an allocation. gzip (32 KiB) and bzip2
/// (under 4 MiB) are bounded by their formats.
pub const XZ_MEMORY_BYTES: u64 = 256 << 20;

/// How a shard's tar is compressed, of those both runtimes read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Bzip2,
    Xz,
}

/// What a shard's first bytes or its name say it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Readable(Compression),
    /// A compression neither runtime reads: its name and the command that decompresses
    /// it.
    Refused(&'static str, &'static str),
}

const ZSTD: Content = Content::Refused("zstd", "zstd -d");
const LZ4: Content = Content::Refused("lz4", "lz4 -d");

/// The magic numbers, longest first where one starts another.
const MAGIC: [(&[u8], Content); 4] = [
    (
        &[0xFD, b'7', b'z', b'X', b'Z', 0x00],
        Content::Readable(Compression::Xz),
    ),
    (&[0x28, 0xB5, 0x2F, 0xFD], ZSTD),
    (&[0x04, 0x22, 0x4D, 0x18], LZ4),
    (&[0x1F, 0x8B], Content::Readable(Compression::Gzip)),
];

/// Whether `head` starts a bzip2 stream: `BZh`, the block size (`1`–`9`), then a block's
/// magic (π's digits) or the stream's end (√π's). Three letters alone would take a
/// plain tar whose first member's name starts with `BZh` for bzip2.
fn is_bzip2(head: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    match head {
        [b'B', b'Z', b'h', b'1'..=b'9', rest @ ..] => {
            rest.starts_with(&BLOCK) || rest.starts_with(&END)
        }
        _ => false,
    }
}

/// The name endings that say what a shard holds (matched lower-cased).
const ENDINGS: [(&str, Content); 13] = [
    (".tar", Content::Readable(Compression::None)),
    (".tar.gz", Content::Readable(Compression::Gzip)),
    (".tgz", Content::Readable(Compression::Gzip)),
    (".tar.bz2", Content::Readable(Compression::Bzip2)),
    (".tbz2", Content::Readable(Compression::Bzip2)),
    (".tbz", Content::Readable(Compression::Bzip2)),
    (".tar.xz", Content::Readable(Compression::Xz)),
    (".txz", Content::Readable(Compression::Xz)),
    (".tar.zst", ZSTD),
    (".tar.zstd", ZSTD),
    (".tzst", ZSTD),
    (".tar.lz4", LZ4),
    (".tlz4", LZ4),
];

impl Compression {
    /// What a user calls it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// The extension its tars take.
    fn extension(self) -> &'static str {
        match self {
            Compression::None => ".tar",
            Compression::Gzip => ".tar.gz",
            Compression::Bzip2 => ".tar.bz2",
            Compression::Xz => ".tar.xz",
        }
    }
}

impl Content {
    fn of_bytes(head: &[u8]) -> Content {
        if is_bzip2(head) {
            return Content::Readable(Compression::Bzip2);
        }
        MAGIC
            .iter()
            .find(|(magic, _)| head.starts_with(magic))
            .map_or(Content::Readable(Compression::None), |&(_, content)| {
                content
            })
    }

    /// What the shard's name says, where it ends in a tar's extension (a URL's query is
    /// no part of its name).
    fn of_name(location: &ShardLocation) -> Option<(&'static str, Content)> {
        let name = match location {
            ShardLocation::File(path) => path.to_string_lossy().into_owned(),
            ShardLocation::Url(url) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
        };
        let name = name.to_ascii_lowercase();
        // The longest ending that matches: `.tar.gz` rather than nothing, `.tar` alone.
        ENDINGS
            .iter()
            .filter(|(ending, _)| name.ends_with(ending))
            .max_by_key(|(ending, _)| ending.len())
            .map(|&(ending, content)| (ending, content))
    }

    fn describe(self) -> String {
        match self {
            Content::Readable(Compression::None) => "a plain (uncompressed) tar".to_owned(),
            Content::Readable(compression) => format!("a {}-compressed tar", compression.name()),
            Content::Refused(name, _) => format!("a {name}-compressed tar"),
        }
    }
}

/// The compression of the shard at `location` whose first bytes are `head`: an error
/// naming the shard for a compression neither runtime reads, or a name that says
/// otherwise than its bytes.
pub fn of_shard(location: &ShardLocation, head: &[u8]) -> Result<Compression> {
    let content = Content::of_bytes(head);
    let compression = match content {
        Content::Readable(compression) => compression,
        Content::Refused(name, command) => {
            return Err(location.bad(format!(
                "{}: loaderbench reads tar shards plain or compressed with gzip, bzip2 or xz, \
                 as webdataset does (Python's tarfile cannot read {name}): decompress it \
                 ({command}) or write it with gzip (.tar.gz)",
                content.describe()
            )));
        }
    };
    let named = Content::of_name(location);
    if let Some((ending, claimed)) = named.filter(|&(_, claimed)| claimed != content) {
        return Err(location.bad(format!(
            "named {ending} ({}) but holds {}: rename it {}, so that both runtimes read it \
             as what it is",
            claimed.describe(),
            content.describe(),
            compression.extension()
        )));
    }
    Ok(compression)
}

/// The first [`MAGIC_BYTES`] of `reader` (fewer where it is shorter), read from it.
pub fn read_head(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(MAGIC_BYTES);
    reader.take(MAGIC_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Time spent decompressing, summed over every stream made with it (one reading
/// thread's, or one index pass's).
#[derive(Debug, Clone, Default)]
pub struct DecompressClock(Arc<AtomicU64>);

impl DecompressClock {
    /// The time summed so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    fn add(&self, spent: Duration) {
        let nanos = u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// What the raw stream under a decoder did: the time its reads took, and whether one
/// failed (so that the decoder's own errors are told from the storage's).
#[derive(Default)]
struct RawState {
    nanos: AtomicU64,
    failed: AtomicBool,
}

/// The raw stream under a decoder, timed.
struct Raw<R> {
    inner: R,
    state: Arc<RawState>,
}

impl<R: Read> Read for Raw<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let started = Instant::now();
        let read = self.inner.read(out);
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.state.nanos.fetch_add(nanos, Ordering::Relaxed);
        if read.is_err() {
            self.state.failed.store(true, Ordering::Relaxed);
        }
        read
    }
}

/// A decoder over a [`Raw`] stream: its time less the raw stream's goes to the clock,
/// and its own errors say which compression's data is bad.
struct Decompressed<D> {
    decoder: D,
    compression: Compression,
    raw: Arc<RawState>,
    clock: DecompressClock,
}

impl<D: Read> Read for Decompressed<D> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let started = Instant::now();
        let raw_before = self.raw.nanos.load(Ordering::Relaxed);
        let read = self.decoder.read(out);
        let raw = (self.raw.nanos.load(Ordering::Relaxed)).saturating_sub(raw_before);
        self.clock
            .add(started.elapsed().saturating_sub(Duration::from_nanos(raw)));
        read.map_err(|err| {
            if self.raw.failed.load(Ordering::Relaxed) {
                return err;
            }
            let what = self.compression.name();
            io::Error::new(
                err.kind(),
                format!("the {what} data is cut or corrupt: {err}"),
            )
        })
    }
}

/// `raw`, the bytes of a shard compressed with `compression`, read decompressed (as it
/// is for a plain tar), the time spent decompressing added to `clock`. Concatenated
/// streams are read as one, as Python's readers do. An error only where an xz decoder
/// cannot be made.
pub fn decompressed(
    raw: Box<dyn Read + Send>,
    compression: Compression,
    clock: &DecompressClock,
) -> io::Result<Box<dyn Read + Send>> {
    let state = Arc::new(RawState::default());
    let raw = Raw {
        inner: raw,
        state: state.clone(),
    };
    let wrap = |decoder: Box<dyn Read + Send>| -> Box<dyn Read + Send> {
        Box::new(Decompressed {
            decoder,
            compression,
            raw: state.clone(),
            clock: clock.clone(),
        })
    };
    Ok(match compression {
        Compression::None => raw.inner,
        Compression::Gzip => wrap(Box::new(flate2::read::MultiGzDecoder::new(raw))),
        Compression::Bzip2 => wrap(Box::new(bzip2::read::MultiBzDecoder::new(raw))),
        Compression::Xz => {
            let flags = liblzma::stream::CONCATENATED;
            let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMORY_BYTES, flags)?;
            wrap(Box::new(liblzma::read::XzDecoder::new_stream(raw, stream)))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::test_tars::compressed;
    use super::*;

    fn file(name: &str) -> ShardLocation {
        ShardLocation::File(PathBuf::from(format!("/data/{name}")))
    }

    const ALL: [Compression; 4] = [
        Compression::None,
        Compression::Gzip,
        Compression::Bzip2,
        Compression::Xz,
    ];

    #[test]
    fn each_compression_is_told_by_its_bytes_and_read_back_whole() {
        let plain: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        for (compression, name) in ALL.into_iter().zip(["a.tar", "a.tgz", "a.tbz2", "a.txz"]) {
            let bytes = compressed(&plain, compression);
            let found = of_shard(&file(name), &bytes[..MAGIC_BYTES]).unwrap();
            assert_eq!(found, compression, "{name}");
            assert_eq!(of_shard(&file("a-0"), &bytes).unwrap(), compression);
            let clock = DecompressClock::default();
            let mut out = Vec::new();
            decompressed(Box::new(std::io::Cursor::new(bytes)), compression, &clock)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            assert!(out == plain, "{name} reads back");
            assert_eq!(
                clock.total() > Duration::ZERO,
                compression != Compression::None,
                "{name}: only decompressing is timed"
            );
        }
    }

    #[test]
    fn a_plain_tar_whose_first_member_is_named_bzh_is_a_plain_tar() {
        let mut header = tar::Header::new_ustar();
        header.set_path("BZh9.png").unwrap();
        header.set_size(0);
        header.set_cksum();
        let head = &header.as_bytes()[..MAGIC_BYTES];
        assert_eq!(of_shard(&file("a.tar"), head).unwrap(), Compression::None);
        // An empty bzip2 stream (its end right after the header) is bzip2.
        let empty = compressed(&[], Compression::Bzip2);
        assert_eq!(of_shard(&file("a-0"), &empty).unwrap(), Compression::Bzip2);
    }

    #[test]
    fn zstd_and_lz4_are_refused_by_their_bytes_naming_the_shard() {
        let zstd = [0x28, 0xB5, 0x2F, 0xFD, 0, 0];
        let msg = of_shard(&file("s.tar.zst"), &zstd).unwrap_err().to_string();
        assert_eq!(
            msg,
            "/data/s.tar.zst: a zstd-compressed tar: loaderbench reads tar shards plain or \
             compressed with gzip, bzip2 or xz, as webdataset does (Python's tarfile cannot \
             read zstd): decompress it (zstd -d) or write it with gzip (.tar.gz)"
        );
        let lz4 = [0x04, 0x22, 0x4D, 0x18, 0, 0];
        let msg = of_shard(&file("s.tar"), &lz4).unwrap_err().to_string();
        assert!(
            msg.starts_with("/data/s.tar: a lz4-compressed tar:"),
            "{msg}"
        );
    }

    #[test]
    fn a_name_that_says_otherwise_than_the_bytes_is_named() {
        let gzip = compressed(b"x", Compression::Gzip);
        let msg = of_shard(&file("s-000.tar"), &gzip).unwrap_err().to_string();
        assert_eq!(
            msg,
            "/data/s-000.tar: named .tar (a plain (uncompressed) tar) but holds a \
             gzip-compressed tar: rename it .tar.gz, so that both runtimes read it as what it is"
        );
        let msg = of_shard(&file("s.TAR.GZ"), b"000000")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("named .tar.gz (a gzip-compressed tar) but holds a plain"));
        let url = ShardLocation::Url("http://h/s.tar.zst?sig=1".to_owned());
        let msg = of_shard(&url, &gzip).unwrap_err().to_string();
        assert!(
            msg.contains("named .tar.zst (a zstd-compressed tar)"),
            "{msg}"
        );
        let url = ShardLocation::Url("http://h/s.tgz?v=.tar".to_owned());
        assert_eq!(of_shard(&url, &gzip).unwrap(), Compression::Gzip);
    }

    #[test]
    fn an_xz_stream_asking_for_more_memory_than_the_cap_is_an_error() {
        let plain: Vec<u8> = (0..1000u32).map(|i| (i % 7) as u8).collect();
        let mut options = liblzma::stream::LzmaOptions::new_preset(6).unwrap();
        options.dict_size(300 << 20);
        let mut filters = liblzma::stream::Filters::new();
        filters.lzma2(&options);
        let stream =
            liblzma::stream::Stream::new_stream_encoder(&filters, liblzma::stream::Check::Crc64)
                .unwrap();
        let mut bytes = Vec::new();
        liblzma::read::XzEncoder::new_stream(&plain[..], stream)
            .read_to_end(&mut bytes)
            .unwrap();
        let clock = DecompressClock::default();
        let mut out = Vec::new();
        let err = decompressed(
            Box::new(std::io::Cursor::new(bytes)),
            Compression::Xz,
            &clock,
        )
        .unwrap()
        .read_to_end(&mut out)
        .unwrap_err()
        .to_string();
        assert!(err.contains("memory limit reached"), "{err}");
    }

    #[test]
    fn a_cut_stream_is_an_error_naming_its_compression() {
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 253) as u8).collect();
        for compression in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let bytes = compressed(&plain, compression);
            let cut = bytes[..bytes.len() / 2].to_vec();
            let mut out = Vec::new();
            let clock = DecompressClock::default();
            let err = decompressed(Box::new(std::io::Cursor::new(cut)), compression, &clock)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap_err()
                .to_string();
            let what = compression.name();
            assert!(
                err.starts_with(&format!("the {what} data is cut or corrupt")),
                "{err}"
            );
        }
    }
}
