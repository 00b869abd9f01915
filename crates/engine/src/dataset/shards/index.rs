//! One pass over a shard at open: its tar members walked with the `tar` crate, grouped
//! into samples by key as WebDataset groups them (the key is the member path up to the
//! first `.` of its file name; consecutive members with one key are one sample), each
//! sample one image (of the image folder's formats, [`IMAGE_EXTENSIONS`], its header
//! checked as the image folder's files are) and one label (`cls`: a decimal integer; `json`: an integer or an object
//! with an integer `"label"`). What a sample is made of is kept (its image member's
//! name, offset and size, and its label), so reading needs no second look at the tar
//! headers. A local plain shard skips the image bodies by seeking (the index pass only);
//! a URL or a compressed shard is read through, decompressed, its compression told by its
//! first bytes ([`compression`](super::compression)). An image member over the dataset's `file_bytes` limit or of more
//! pixels than `image_pixels`, an extension header too large, a shard without its
//! end-of-archive blocks ([`members`](super::members)) and anything else in a shard is
//! an error naming the shard and the member.

use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use tar::{Archive, Entries};

use super::compression::{self, Compression, DecompressClock};
use super::members;
use super::pattern::ShardLocation;
use super::source::{Http, PositionedFile};
use crate::dataset::DatasetLimits;
use crate::dataset::image_folder::IMAGE_EXTENSIONS;
use crate::dataset::image_header::{self, PilConversion};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The most bytes a label member may hold.
const MAX_LABEL_BYTES: u64 = 64 * 1024;

/// One sample of a shard: where its image's bytes are, and its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleEntry {
    /// The image member's path in the tar.
    pub member: String,
    /// The offset of the image's bytes from the start of the shard, and their length.
    pub offset: u64,
    pub size: u64,
    pub label: i64,
    /// PIL clips the image's samples (16-bit grey, see [`PilConversion`]): the dataset
    /// warns of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pil_clips: bool,
}

/// What the index pass found in one shard.
pub struct Indexed {
    pub compression: Compression,
    /// Its samples, in member order.
    pub samples: Vec<SampleEntry>,
}

/// The compression of the shard at `location` and its samples (a URL fetched through
/// `http`), within `limits`.
pub fn index_shard(
    location: &ShardLocation,
    http: &Http,
    limits: &DatasetLimits,
) -> Result<Indexed> {
    let unreadable = |err: std::io::Error| location.caused(format!("cannot read: {err}"), err);
    match location {
        ShardLocation::File(path) => {
            let mut file = PositionedFile::open(path)
                .map_err(|err| location.caused(format!("cannot open: {err}"), err))?;
            let head = compression::read_head(&mut file).map_err(unreadable)?;
            let compression = compression::of_shard(location, &head)?;
            file.seek(SeekFrom::Start(0)).map_err(unreadable)?;
            let samples = match compression {
                Compression::None => {
                    let len = file.len();
                    index_seekable(location, file, len, limits)?
                }
                _ => index_stream(location, Box::new(file), compression, limits)?,
            };
            Ok(Indexed {
                compression,
                samples,
            })
        }
        ShardLocation::Url(url) => {
            let mut body = http.get(url)?;
            let head = compression::read_head(&mut body).map_err(unreadable)?;
            let compression = compression::of_shard(location, &head)?;
            let stream = Box::new(Cursor::new(head).chain(body));
            let samples = index_stream(location, stream, compression, limits)?;
            Ok(Indexed {
                compression,
                samples,
            })
        }
    }
}

/// [`index_shard`] of a shard read through from `raw`, its bytes as stored.
fn index_stream(
    location: &ShardLocation,
    raw: Box<dyn Read + Send>,
    compression: Compression,
    limits: &DatasetLimits,
) -> Result<Vec<SampleEntry>> {
    // Decompressing at open is no part of any epoch.
    let clock = DecompressClock::default();
    let stream = compression::decompressed(raw, compression, &clock)
        .map_err(|err| location.caused(format!("cannot decompress: {err}"), err))?;
    let mut archive = Archive::new(stream);
    let entries = archive.entries().map_err(broken(location))?;
    let (samples, last) = walk(location, None, limits, entries)?;
    finish(location, samples, last, archive.into_inner())
}

/// [`index_shard`] of a shard `len` bytes long read from `shard`, which seeks past the
/// image bodies.
pub fn index_seekable(
    location: &ShardLocation,
    shard: impl Read + Seek,
    len: u64,
    limits: &DatasetLimits,
) -> Result<Vec<SampleEntry>> {
    let mut archive = Archive::new(shard);
    let entries = archive.entries_with_seek().map_err(broken(location))?;
    let (samples, last) = walk(location, Some(len), limits, entries)?;
    finish(location, samples, last, archive.into_inner())
}

fn broken(location: &ShardLocation) -> impl Fn(std::io::Error) -> crate::error::Error + '_ {
    |err| location.caused(format!("not a readable tar: {err}"), err)
}

/// The shard's `samples`, once it holds some and `rest` (what follows the `last`
/// member) is its end-of-archive marker.
fn finish(
    location: &ShardLocation,
    samples: Vec<SampleEntry>,
    last: Option<String>,
    rest: impl Read,
) -> Result<Vec<SampleEntry>> {
    if samples.is_empty() {
        return Err(location.bad("no samples in this shard"));
    }
    members::require_end(location, rest, last.as_deref())?;
    Ok(samples)
}

/// Groups the members of `entries` into samples, and names the last member; `len` is a
/// local shard's length.
fn walk<R: Read>(
    location: &ShardLocation,
    len: Option<u64>,
    limits: &DatasetLimits,
    entries: Entries<'_, R>,
) -> Result<(Vec<SampleEntry>, Option<String>)> {
    let mut samples = Samples {
        location,
        limits,
        done: Vec::new(),
        open: None,
    };
    let last = members::walk(location, entries, |member, entry| {
        if entry.header().entry_type().is_dir() {
            return Ok(());
        }
        if !entry.header().entry_type().is_file() {
            return Err(location.bad(format!("{member}: not a regular file")));
        }
        // A local shard's bodies are skipped by seeking, and tar stops quietly at the end
        // of the file, so a member cut short is caught here.
        let end = entry.raw_file_position() + entry.size();
        if let Some(len) = len.filter(|&len| end > len) {
            return Err(location.bad(format!(
                "{member}: truncated: the member needs bytes up to {end} but the file ends at {len}"
            )));
        }
        samples.add(member, entry)
    })?;
    Ok((samples.finish()?, last))
}

/// What a member holds, by its extension.
enum Part {
    Image,
    Label,
}

/// The sample being gathered: its key and the members seen so far.
struct Open {
    key: String,
    image: Option<(String, u64, u64, PilConversion)>,
    label: Option<(String, i64)>,
}

/// Samples gathered member by member.
struct Samples<'a> {
    location: &'a ShardLocation,
    limits: &'a DatasetLimits,
    done: Vec<SampleEntry>,
    open: Option<Open>,
}

impl Samples<'_> {
    fn add<R: Read>(&mut self, member: String, entry: &mut tar::Entry<'_, R>) -> Result<()> {
        let (key, extension) = split_key(&member);
        let lower = extension.to_ascii_lowercase();
        let part = match lower.as_str() {
            "cls" | "json" => Part::Label,
            image if IMAGE_EXTENSIONS.contains(&image) => Part::Image,
            _ => {
                return Err(self.location.bad(format!(
                    "{member}: unknown extension {extension:?}: a sample is an image (.{}) \
                     and a label (.cls, .json)",
                    IMAGE_EXTENSIONS.join(", .")
                )));
            }
        };
        if self.open.as_ref().is_none_or(|open| open.key != key) {
            self.close()?;
            self.open = Some(Open {
                key: key.to_owned(),
                image: None,
                label: None,
            });
        }
        let location = self.location;
        // Just set above.
        let open = self.open.as_mut().expect("a sample is open");
        match part {
            Part::Image => {
                if let Some((first, ..)) = &open.image {
                    return Err(location.bad(format!(
                        "{member}: two images under the key {key} (the first is {first})"
                    )));
                }
                let (offset, size) = (entry.raw_file_position(), entry.size());
                let limits = self.limits;
                let what = "the member's size in bytes";
                DatasetLimits::check_problem(what, size, "file_bytes", limits.file_bytes)
                    .map_err(|problem| location.bad(format!("{member}: {problem}")))?;
                let shard = location.to_string();
                let checked = if matches!(lower.as_str(), "jpg" | "jpeg" | "png") {
                    image_header::check_reader(&mut BufReader::with_capacity(4096, entry), limits)
                } else {
                    // The other formats' decoders seek (a TIFF's directory can lie at its
                    // end): the member, within `file_bytes`, is checked in memory.
                    let mut bytes = Vec::new();
                    entry
                        .read_to_end(&mut bytes)
                        .map_err(|err| location.bad(format!("{member}: cannot read: {err}")))?;
                    image_header::check_file_header(&mut Cursor::new(bytes), limits)
                };
                let conversion = checked.map_err(|bad| bad.at(Path::new(&shard), Some(&member)))?;
                open.image = Some((member, offset, size, conversion));
            }
            Part::Label => {
                if let Some((first, _)) = &open.label {
                    return Err(location.bad(format!(
                        "{member}: two labels under the key {key} (the first is {first})"
                    )));
                }
                let label = read_label(entry, extension)
                    .map_err(|problem| location.bad(format!("{member}: {problem}")))?;
                open.label = Some((member, label));
            }
        }
        Ok(())
    }

    /// Ends the open sample, which must have its image and its label.
    fn close(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        match (open.image, open.label) {
            (Some((member, offset, size, conversion)), Some((_, label))) => {
                self.done.push(SampleEntry {
                    member,
                    offset,
                    size,
                    label,
                    pil_clips: conversion == PilConversion::ClipsGrey16,
                });
                Ok(())
            }
            (Some((member, ..)), None) => Err(self.location.bad(format!(
                "{member}: no label: the sample {} needs a .cls or .json member beside it",
                open.key
            ))),
            (None, Some((member, _))) => Err(self.location.bad(format!(
                "{member}: no image: the sample {} needs a .jpg, .jpeg or .png member beside it",
                open.key
            ))),
            (None, None) => Ok(()),
        }
    }

    fn finish(mut self) -> Result<Vec<SampleEntry>> {
        self.close()?;
        Ok(self.done)
    }
}

/// A member's key (its path up to the first `.` of its file name) and the extension
/// after that dot (empty when there is none).
fn split_key(member: &str) -> (&str, &str) {
    let name_start = member.rfind('/').map_or(0, |slash| slash + 1);
    match member[name_start..].find('.') {
        Some(dot) => (&member[..name_start + dot], &member[name_start + dot + 1..]),
        None => (member, ""),
    }
}

/// A label member's class: `cls` a decimal integer, `json` an integer or an object with
/// an integer `"label"`.
fn read_label(entry: &mut impl Read, extension: &str) -> std::result::Result<i64, String> {
    let mut text = String::new();
    entry
        .take(MAX_LABEL_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|err| format!("cannot read the label: {err}"))?;
    if text.len() as u64 > MAX_LABEL_BYTES {
        return Err(format!("the label is longer than {MAX_LABEL_BYTES} bytes"));
    }
    let text = text.trim();
    if extension.eq_ignore_ascii_case("cls") {
        return text
            .parse()
            .map_err(|_| format!("the label {text:?} is not a decimal integer"));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|err| format!("the label is not JSON: {err}"))?;
    let label = match &value {
        serde_json::Value::Object(fields) => fields.get("label"),
        other => Some(other),
    };
    label.and_then(serde_json::Value::as_i64).ok_or_else(|| {
        format!("the label {text} is not an integer or an object with an integer \"label\"")
    })
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::super::test_tars::{png, samples, write_tar};
    use super::*;

    /// [`index_shard`] of a local shard within the default limits.
    fn index_local(location: &ShardLocation) -> Result<Vec<SampleEntry>> {
        index_shard(
            location,
            &Http::new(30, CancelToken::new()),
            &DatasetLimits::DEFAULT,
        )
        .map(|indexed| indexed.samples)
    }
    use crate::cancel::CancelToken;

    fn index(members: &[(String, Vec<u8>)]) -> Result<Vec<SampleEntry>> {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        write_tar(&path, members);
        index_local(&ShardLocation::File(path))
    }

    /// The bytes of a shard of `members`.
    fn tar_bytes(members: &[(String, Vec<u8>)]) -> Vec<u8> {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        write_tar(&path, members);
        std::fs::read(&path).unwrap()
    }

    /// Indexes `bytes` written as a shard of their own.
    fn index_bytes(bytes: &[u8]) -> Result<Vec<SampleEntry>> {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        std::fs::write(&path, bytes).unwrap();
        index_local(&ShardLocation::File(path))
    }

    fn error(members: &[(String, Vec<u8>)]) -> String {
        let msg = index(members).unwrap_err().to_string();
        assert!(msg.contains("shard.tar: "), "the shard is named: {msg}");
        msg
    }

    fn member(name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
        (name.to_owned(), bytes.to_vec())
    }

    #[test]
    fn members_group_into_samples_by_key_with_their_image_bytes_located() {
        let mut members = samples(0, 2);
        members.push(member("d.x/a.json", br#"{"label": 7}"#));
        members.push(member("d.x/a.jpeg", &png(2, 2, [1, 2, 3])));
        members.push(member("c.JSON", b" 4\n"));
        members.push(member("c.png", &png(2, 2, [1, 2, 3])));
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        write_tar(&path, &members);
        let found = index_local(&ShardLocation::File(path.clone())).unwrap();
        let labels: Vec<i64> = found.iter().map(|s| s.label).collect();
        assert_eq!(labels, [0, 1, 7, 4]);
        let names: Vec<&str> = found.iter().map(|s| s.member.as_str()).collect();
        assert_eq!(names, ["000000.png", "000001.png", "d.x/a.jpeg", "c.png"]);
        let bytes = std::fs::read(&path).unwrap();
        for (sample, (_, image)) in found.iter().zip([&members[0], &members[2]]) {
            let at = sample.offset as usize;
            assert_eq!(&bytes[at..at + sample.size as usize], &image[..]);
        }
    }

    #[test]
    fn images_of_the_image_folder_s_other_formats_are_indexed_and_a_broken_one_named() {
        let encoded = |format| {
            let mut bytes = Vec::new();
            image::RgbImage::from_pixel(3, 2, image::Rgb([9, 8, 7]))
                .write_to(&mut Cursor::new(&mut bytes), format)
                .unwrap();
            bytes
        };
        let members = [
            member("a.tiff", &encoded(image::ImageFormat::Tiff)),
            member("a.cls", b"0"),
            member("b.webp", &encoded(image::ImageFormat::WebP)),
            member("b.cls", b"1"),
            member("c.BMP", &encoded(image::ImageFormat::Bmp)),
            member("c.cls", b"2"),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("formats.tar");
        write_tar(&path, &members);
        let found = index_local(&ShardLocation::File(path)).unwrap();
        let names: Vec<&str> = found.iter().map(|s| s.member.as_str()).collect();
        assert_eq!(names, ["a.tiff", "b.webp", "c.BMP"]);
        let broken = [
            member("a.webp", b"RIFF\x04\x00\x00\x00WEBP"),
            member("a.cls", b"0"),
        ];
        let msg = error(&broken);
        assert!(msg.contains("a.webp: not a readable image"), "{msg}");
    }

    #[test]
    fn keys_split_at_the_first_dot_of_the_file_name() {
        assert_eq!(split_key("a/b.c/d.seg.png"), ("a/b.c/d", "seg.png"));
        assert_eq!(split_key("noext"), ("noext", ""));
    }

    #[test]
    fn a_sample_missing_a_part_or_with_a_stray_member_is_named() {
        let mut no_label = samples(0, 2);
        no_label.remove(1);
        let msg = error(&no_label);
        assert!(msg.contains("000000.png: no label"), "{msg}");
        let mut no_image = samples(0, 1);
        no_image.remove(0);
        assert!(error(&no_image).contains("000000.cls: no image"));
        let mut stray = samples(0, 1);
        stray.push(member("000000.txt", b"notes"));
        let msg = error(&stray);
        assert!(
            msg.contains("000000.txt: unknown extension \"txt\""),
            "{msg}"
        );
        let mut two = samples(0, 1);
        two.push(member("000000.jpg", &png(2, 2, [0; 3])));
        let msg = error(&two);
        assert!(
            msg.contains("000000.jpg: two images under the key 000000"),
            "{msg}"
        );
    }

    #[test]
    fn bad_labels_and_images_are_named() {
        let cls = [member("a.png", &png(2, 2, [0; 3])), member("a.cls", b"cat")];
        assert!(error(&cls).contains("a.cls: the label \"cat\" is not a decimal integer"));
        let json = [
            member("a.json", br#"{"class": 1}"#),
            member("a.png", &png(2, 2, [0; 3])),
        ];
        assert!(error(&json).contains("a.json: the label {\"class\": 1} is not an integer"));
        let image = [member("a.jpg", b"not a jpeg"), member("a.cls", b"1")];
        assert!(error(&image).contains("a.jpg: not a readable image"));
        assert!(error(&[]).contains("no samples in this shard"));
    }

    #[test]
    fn a_truncated_shard_is_named_with_its_member() {
        let bytes = tar_bytes(&samples(0, 3));
        let full = index_bytes(&bytes).unwrap();
        // Inside the last image's bytes, and inside the header before it.
        let msg = index_bytes(&bytes[..full[2].offset as usize + 10]).unwrap_err();
        assert!(msg.to_string().contains("000002.png: truncated"), "{msg}");
        let msg = index_bytes(&bytes[..full[2].offset as usize - 100]).unwrap_err();
        let msg = msg.to_string();
        assert!(
            msg.contains("not a readable tar after member 000001"),
            "{msg}"
        );
    }

    #[test]
    fn long_names_and_pax_paths_name_their_members() {
        let long = format!("{}/0001", "d".repeat(120));
        let members = [
            member(&format!("{long}.png"), &png(2, 2, [1, 2, 3])),
            member(&format!("{long}.cls"), b"5"),
        ];
        let found = index(&members).unwrap();
        assert_eq!(found[0].member, format!("{long}.png"));
        // A PAX path record, as Python's tarfile writes for a name that needs one.
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        let mut tar = tar::Builder::new(Vec::new());
        let pax_name = "caf\u{e9}/0002";
        for (name, bytes) in [
            (format!("{pax_name}.png"), png(2, 2, [1, 2, 3])),
            (format!("{pax_name}.cls"), b"6".to_vec()),
        ] {
            tar.append_pax_extensions([("path", name.as_bytes())])
                .unwrap();
            let mut header = tar::Header::new_ustar();
            header.set_path("placeholder").unwrap();
            header.set_size(bytes.len() as u64);
            header.set_cksum();
            tar.append(&header, &bytes[..]).unwrap();
        }
        std::fs::write(&path, tar.into_inner().unwrap()).unwrap();
        let found = index_local(&ShardLocation::File(path)).unwrap();
        assert_eq!(
            (found[0].member.as_str(), found[0].label),
            ("caf\u{e9}/0002.png", 6)
        );
    }

    /// A stream of folder headers without end, as a hostile server sends one.
    struct EndlessFolders {
        block: Vec<u8>,
        at: usize,
    }

    impl Read for EndlessFolders {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = out.len().min(self.block.len() - self.at);
            out[..n].copy_from_slice(&self.block[self.at..self.at + n]);
            self.at = (self.at + n) % self.block.len();
            Ok(n)
        }
    }

    #[test]
    fn a_shard_of_members_without_end_or_of_names_past_a_path_is_refused() {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_path("d/").unwrap();
        header.set_size(0);
        header.set_cksum();
        let endless = EndlessFolders {
            block: header.as_bytes().to_vec(),
            at: 0,
        };
        let location = ShardLocation::Url("http://endless.example/s.tar".to_owned());
        let msg = index_stream(
            &location,
            Box::new(endless),
            Compression::None,
            &DatasetLimits::DEFAULT,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            msg,
            "http://endless.example/s.tar: holds more than 1000000 members, more than a shard \
             holds (see docs/limits.md)"
        );
        let long = format!("{}.png", "n".repeat(members::LONGEST_MEMBER_NAME));
        let msg = error(&[member(&long, &png(2, 2, [1, 2, 3]))]);
        assert!(
            msg.contains("a member name of 4100 bytes, longer than the 4096 a path may be"),
            "{msg}"
        );
    }

    #[test]
    fn an_extension_header_over_its_cap_is_refused_before_its_payload_is_read() {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::XHeader);
        header.set_path("pax").unwrap();
        header.set_size(members::MAX_EXTENSION_BYTES + 1);
        header.set_cksum();
        let msg = index_bytes(header.as_bytes()).unwrap_err().to_string();
        assert!(
            msg.contains("shard.tar: the PAX header at byte 0 claims 1048577 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn a_member_over_file_bytes_or_an_image_over_image_pixels_is_named() {
        let limits = |file_bytes, image_pixels| DatasetLimits {
            file_bytes,
            image_pixels,
            ..DatasetLimits::DEFAULT
        };
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shard.tar");
        write_tar(&path, &samples(0, 2));
        let location = ShardLocation::File(path);
        let error = |limits| {
            index_shard(&location, &Http::new(30, CancelToken::new()), &limits)
                .map(|indexed| indexed.samples)
                .unwrap_err()
                .to_string()
        };
        let msg = error(limits(20, u64::MAX));
        assert!(
            msg.contains("000000.png: the member's size in bytes is"),
            "{msg}"
        );
        assert!(msg.contains("dataset.limits.file_bytes"), "{msg}");
        let msg = error(limits(u64::MAX, 5));
        assert!(
            msg.contains("000000.png: the image's pixels (3×2) is 6"),
            "{msg}"
        );
    }

    #[test]
    fn a_shard_without_its_end_of_archive_blocks_is_cut() {
        let bytes = tar_bytes(&samples(0, 2));
        assert_eq!(index_bytes(&bytes).unwrap().len(), 2);
        let end = bytes.len() - 1024;
        for (kept, problem) in [
            (
                bytes[..end].to_vec(),
                "cut: no end-of-archive blocks after member 000001.cls",
            ),
            (bytes[..end + 512].to_vec(), "cut: no end-of-archive blocks"),
            (
                [&bytes[..end + 512], &[1u8; 512][..]].concat(),
                "a lone zero block followed by data",
            ),
        ] {
            let msg = index_bytes(&kept).unwrap_err().to_string();
            assert!(msg.contains(problem), "{msg}");
        }
    }
}
