//! A shard's tar members as the index pass walks them: the raw headers read with the
//! `tar` crate, a GNU long name (`L`) or a PAX path record (`x`) applied to the member
//! that follows, each such header's payload (and a long link's `K`, a global PAX `g`)
//! capped at [`MAX_EXTENSION_BYTES`] before it is read into memory, and the archive
//! required to end with tar's end-of-archive blocks, so that a shard cut at a header
//! boundary is named rather than read as a shorter shard. A shard of more than
//! [`MOST_MEMBERS`] members, or a member name longer than [`LONGEST_MEMBER_NAME`], is
//! refused as it is met.

use std::io::Read;

use tar::{Entries, Entry, EntryType};

use super::pattern::ShardLocation;
use crate::error::Result;

/// The most bytes one long-name, long-link or PAX header's payload may hold (1 MiB). A
/// real one holds a path or a few records, a few hundred bytes; a header claiming more
/// is refused before its payload is read.
pub const MAX_EXTENSION_BYTES: u64 = 1 << 20;

/// The most members (extension headers and folders included) one shard may hold: a real
/// shard holds thousands; a stream of members without end (a server sending folder
/// headers forever) must end as an error, not hold the run.
pub const MOST_MEMBERS: usize = 1_000_000;

/// The longest member name a shard may give (4 KiB, Linux's longest path): the index
/// keeps every sample's name, and a shard of megabyte names would take gigabytes.
pub const LONGEST_MEMBER_NAME: usize = 4096;

/// Tar's block: headers and the end-of-archive marker (two zero blocks) are one each.
const BLOCK_BYTES: u64 = 512;

/// Calls `member(name, entry)` for each member of `entries` that is not an extension
/// header, its name the long name or PAX path that came before it, else its header's;
/// returns the last member's name.
pub fn walk<R: Read>(
    location: &ShardLocation,
    entries: Entries<'_, R>,
    mut member: impl FnMut(String, &mut Entry<'_, R>) -> Result<()>,
) -> Result<Option<String>> {
    let mut extended = Extended::default();
    let mut last: Option<String> = None;
    for (index, entry) in entries.raw(true).enumerate() {
        if index == MOST_MEMBERS {
            return Err(location.bad(format!(
                "holds more than {MOST_MEMBERS} members, more than a shard holds (see \
                 docs/limits.md)"
            )));
        }
        let mut entry = entry.map_err(|err| {
            let after = last
                .as_ref()
                .map_or(String::new(), |member| format!(" after member {member}"));
            location.caused(format!("not a readable tar{after}: {err}"), err)
        })?;
        let kind = entry.header().entry_type();
        if is_extension(kind) {
            extended.read(location, kind, &mut entry)?;
            continue;
        }
        let name = extended.name.take().unwrap_or_else(|| {
            entry.path().map_or_else(
                |_| String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                |path| path.to_string_lossy().into_owned(),
            )
        });
        if let Some(size) = extended.size.take().filter(|&size| size != entry.size()) {
            return Err(location.bad(format!(
                "{name}: a PAX size record of {size} bytes that its header's {} does not \
                 match: not supported",
                entry.size()
            )));
        }
        if name.len() > LONGEST_MEMBER_NAME {
            let start: String = name.chars().take(64).collect();
            return Err(location.bad(format!(
                "{start}…: a member name of {} bytes, longer than the {LONGEST_MEMBER_NAME} a \
                 path may be",
                name.len()
            )));
        }
        last = Some(name.clone());
        member(name, &mut entry)?;
    }
    Ok(last)
}

/// Fails unless `rest`, what follows the block the `tar` crate stopped at, is the second
/// zero block of tar's end-of-archive marker; `last` is the last member read.
pub fn require_end(location: &ShardLocation, rest: impl Read, last: Option<&str>) -> Result<()> {
    let mut block = Vec::new();
    rest.take(BLOCK_BYTES)
        .read_to_end(&mut block)
        .map_err(|err| location.caused(format!("not a readable tar: {err}"), err))?;
    if block.len() as u64 == BLOCK_BYTES && block.iter().all(|&byte| byte == 0) {
        return Ok(());
    }
    let after = last.map_or(String::new(), |member| format!(" after member {member}"));
    Err(location.bad(if block.iter().any(|&byte| byte != 0) {
        format!("not a readable tar{after}: a lone zero block followed by data")
    } else {
        format!(
            "cut: no end-of-archive blocks{after}: the shard stops at a header boundary \
             (an interrupted write?)"
        )
    }))
}

fn is_extension(kind: EntryType) -> bool {
    kind.is_gnu_longname()
        || kind.is_gnu_longlink()
        || kind.is_pax_local_extensions()
        || kind.is_pax_global_extensions()
}

/// What extension headers said about the member that follows them.
#[derive(Default)]
struct Extended {
    name: Option<String>,
    size: Option<u64>,
}

impl Extended {
    /// Reads the extension header `entry` of type `kind`, its payload capped.
    fn read<R: Read>(
        &mut self,
        location: &ShardLocation,
        kind: EntryType,
        entry: &mut Entry<'_, R>,
    ) -> Result<()> {
        let at = entry.raw_header_position();
        if entry.size() > MAX_EXTENSION_BYTES {
            return Err(location.bad(format!(
                "the {} header at byte {at} claims {} bytes, over the {MAX_EXTENSION_BYTES} \
                 bytes any tar needs: not a shard as written",
                extension_name(kind),
                entry.size()
            )));
        }
        let mut payload = Vec::new();
        entry
            .read_to_end(&mut payload)
            .map_err(|err| location.caused(format!("not a readable tar: {err}"), err))?;
        if kind.is_gnu_longname() {
            let name = payload.split(|&byte| byte == 0).next().unwrap_or_default();
            self.name = Some(String::from_utf8_lossy(name).into_owned());
        } else if kind.is_pax_local_extensions() {
            for record in tar::PaxExtensions::new(&payload) {
                let record = record.map_err(|err| {
                    location.caused(format!("a bad PAX header at byte {at}: {err}"), err)
                })?;
                match record.key_bytes() {
                    b"path" => {
                        self.name = Some(String::from_utf8_lossy(record.value_bytes()).into_owned())
                    }
                    b"size" => self.size = Some(pax_size(location, at, record.value_bytes())?),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

fn pax_size(location: &ShardLocation, at: u64, value: &[u8]) -> Result<u64> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            location.bad(format!(
                "a bad PAX header at byte {at}: the size {:?} is not a number",
                String::from_utf8_lossy(value)
            ))
        })
}

fn extension_name(kind: EntryType) -> &'static str {
    if kind.is_gnu_longname() {
        "GNU long-name"
    } else if kind.is_gnu_longlink() {
        "GNU long-link"
    } else {
        "PAX"
    }
}
