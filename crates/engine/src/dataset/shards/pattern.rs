//! A shard dataset's `path` turned into the ordered list of its shards: brace expansion
//! first (numeric ranges keep their zero padding, `{000000..000009}`; comma sets,
//! `{train,val}`), in the order the braces give, then, for local paths, globs (`*`, `?`,
//! `[..]`), each glob's matches in name order. `http://` and `https://` patterns are
//! expanded by braces only and kept as URLs (a web server cannot be listed). A pattern
//! that expands to nothing, or a glob that matches no file, is an error naming it. An
//! environment variable, `${SIG}`, is not a brace set: it stays for the fetch to fill.
//! The braces are counted before they are expanded: a pattern naming more shards than
//! `dataset.limits.shards` is refused without building its list.

use std::path::{Path, PathBuf};

use bracoxide::ExpansionError;
use bracoxide::parser::Node;
use serde::{Deserialize, Serialize};

use crate::dataset::DatasetLimits;
use crate::error::{Error, Result};

/// Where one shard is read from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ShardLocation {
    /// A local tar file.
    File(PathBuf),
    /// A tar file fetched with one HTTP GET.
    Url(String),
}

impl ShardLocation {
    /// The local file, for a shard on disk.
    pub fn file(&self) -> Option<&Path> {
        match self {
            ShardLocation::File(path) => Some(path),
            ShardLocation::Url(_) => None,
        }
    }

    /// What a reader opens: the file's path, or the URL with its environment variables
    /// filled in ([`crate::secrets::expand`]); never shown or saved.
    pub fn target(&self) -> Result<String> {
        match self {
            ShardLocation::File(path) => Ok(path.display().to_string()),
            ShardLocation::Url(url) => {
                crate::secrets::expand(url).map_err(|err| self.caused(err.to_string(), err))
            }
        }
    }

    /// Bad input at this shard: the error names it, then `problem`.
    pub fn bad(&self, problem: impl Into<String>) -> Error {
        Error::file(self.to_string(), problem)
    }

    /// [`ShardLocation::bad`], caused by `source`.
    pub fn caused(
        &self,
        problem: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::file_caused(self.to_string(), problem, source)
    }
}

impl std::fmt::Display for ShardLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardLocation::File(path) => write!(f, "{}", path.display()),
            ShardLocation::Url(url) => f.write_str(&crate::secrets::redact(url)),
        }
    }
}

/// The shards `pattern` names, in reading order: at most `max_shards` of them
/// (`dataset.limits.shards`), or an error saying how many it names.
pub fn shard_locations(pattern: &str, max_shards: u64) -> Result<Vec<ShardLocation>> {
    if pattern.trim().is_empty() {
        return Err(Error::value("dataset.path: the shard pattern is empty"));
    }
    let expanded = expand_braces(&to_ascii(pattern)?, max_shards)?;
    let mut locations = Vec::new();
    for name in expanded.iter().map(|name| from_ascii(name)) {
        if is_url(&name) {
            locations.push(ShardLocation::Url(name));
        } else if let Some((scheme, _)) = name.split_once("://") {
            return Err(Error::file(
                pattern,
                format!(
                    "{scheme}:// shards cannot be read: use a local path or an http:// or https:// URL"
                ),
            ));
        } else if has_glob(&name) {
            locations.extend(glob_files(pattern, &name)?);
        } else {
            locations.push(ShardLocation::File(PathBuf::from(name)));
        }
    }
    if locations.is_empty() {
        return Err(Error::file(pattern, "the pattern names no shard"));
    }
    check_count(pattern, Some(locations.len() as u64), max_shards)?;
    Ok(locations)
}

/// The error for a pattern naming `count` shards (`None`: more than a u64 holds) when
/// that is over `max_shards`.
fn check_count(pattern: &str, count: Option<u64>, max_shards: u64) -> Result<()> {
    let (what, count) = match count {
        Some(count) => ("the number of shards dataset.path names", count),
        None => (
            "the number of shards dataset.path names (at least)",
            u64::MAX,
        ),
    };
    DatasetLimits::check(pattern, what, count, "shards", max_shards)
}

fn is_url(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn has_glob(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// The most brace groups a pattern may hold: far more than a shard pattern needs
/// (`s-{000..999}` has one), and few enough that expanding them never nests deeply
/// (eight thousand groups overflowed the stack).
const MOST_BRACES: usize = 100;

/// What stands, while braces are expanded, for `${` and `}` of an environment variable
/// ([`crate::secrets::expand`]), so that `${SIG}` is not read as a brace set, and around
/// each other character outside ASCII, written as its code in letters (bracoxide mixes
/// characters and bytes when it places its tokens, and panics on text that is not
/// ASCII). Control characters, which no path holds: a pattern with one is refused.
const VARIABLE_OPEN: char = '\u{1}';
const VARIABLE_CLOSE: char = '\u{2}';
const WIDE_OPEN: char = '\u{3}';
const WIDE_CLOSE: char = '\u{4}';

/// `pattern` as bracoxide may read it: see [`VARIABLE_OPEN`].
fn to_ascii(pattern: &str) -> Result<String> {
    if pattern.contains(char::is_control) {
        return Err(Error::file(
            pattern,
            "the shard pattern holds a control character",
        ));
    }
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push(VARIABLE_OPEN);
        out.push_str(&rest[start + 2..start + length]);
        out.push(VARIABLE_CLOSE);
        rest = &rest[start + length + 1..];
    }
    out.push_str(rest);
    Ok(out
        .chars()
        .fold(String::with_capacity(out.len()), |mut ascii, c| {
            if c.is_ascii() {
                ascii.push(c);
            } else {
                // Letters, not digits, so that no code is read as a number of a range.
                ascii.push(WIDE_OPEN);
                ascii.extend(format!("{:x}", u32::from(c)).chars().map(hex_letter));
                ascii.push(WIDE_CLOSE);
            }
            ascii
        }))
}

/// A hex digit as a letter: `0`–`f` as `g`–`v`.
fn hex_letter(digit: char) -> char {
    let value = digit.to_digit(16).unwrap_or(0);
    char::from(b'g' + value as u8)
}

/// The pattern (or a name it expanded to) as the user wrote it: [`to_ascii`] undone.
fn from_ascii(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        match c {
            VARIABLE_OPEN => out.push_str("${"),
            VARIABLE_CLOSE => out.push('}'),
            WIDE_OPEN => {
                let code: String = chars
                    .by_ref()
                    .take_while(|&c| c != WIDE_CLOSE)
                    .filter_map(|c| (c as u32).checked_sub(u32::from(b'g')))
                    .filter_map(|digit| char::from_digit(digit, 16))
                    .collect();
                let wide = u32::from_str_radix(&code, 16).ok().and_then(char::from_u32);
                out.push(wide.unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            c => out.push(c),
        }
    }
    out
}

/// The strings the pattern's braces expand to (the pattern itself when it has none),
/// counted first: more than `max_shards` is an error, and nothing is expanded.
fn expand_braces(pattern: &str, max_shards: u64) -> Result<Vec<String>> {
    if !pattern.contains(['{', '}']) {
        return Ok(vec![pattern.to_owned()]);
    }
    // Errors name the pattern as the user wrote it.
    let shown = from_ascii(pattern);
    let braces = pattern.matches('{').count();
    if braces > MOST_BRACES {
        return Err(Error::file(
            &shown,
            format!("the shard pattern has {braces} brace groups, more than {MOST_BRACES}"),
        ));
    }
    let cannot = |err: &dyn std::fmt::Display| {
        Error::file(&shown, format!("cannot expand the braces: {err}"))
    };
    let tokens = bracoxide::tokenizer::tokenize(pattern).map_err(|err| cannot(&err))?;
    let tree = bracoxide::parser::parse(&tokens).map_err(|err| cannot(&err))?;
    let bound = expansion_bound(&tree).map_err(|err| cannot(&err))?;
    check_count(&shown, bound, max_shards)?;
    bracoxide::expand(&tree).map_err(|err| cannot(&err))
}

/// How many strings `node` expands to, without expanding it; `None` when more than a
/// u64 holds (`{0..18446744073709551615}` names 2^64). An empty part of a product counts
/// as one, so that no part bracoxide expands on its way is larger than the bound.
fn expansion_bound(node: &Node) -> std::result::Result<Option<u64>, ExpansionError> {
    let bound = |part: &Option<Box<Node>>| part.as_deref().map_or(Ok(Some(1)), expansion_bound);
    Ok(match node {
        Node::Text { .. } => Some(1),
        Node::BraceExpansion {
            prefix,
            inside,
            postfix,
            ..
        } => [bound(prefix)?, bound(inside)?, bound(postfix)?]
            .into_iter()
            .try_fold(1u64, |product, part| product.checked_mul(part?.max(1))),
        Node::Collection { items, .. } => {
            let mut sum = Some(0u64);
            for item in items {
                sum = match (sum, expansion_bound(item)?) {
                    (Some(sum), Some(item)) => sum.checked_add(item),
                    _ => None,
                };
            }
            sum
        }
        Node::Range { from, to, .. } => {
            // bracoxide parses the bounds as usize, which is u64 on the targets we build.
            let bound = |text: &str| {
                text.parse::<u64>()
                    .map_err(|_| ExpansionError::NumConversionFailed(text.to_owned()))
            };
            // bracoxide expands a range that counts down (`{9..0}`) to nothing.
            let (from, to) = (bound(from)?, bound(to)?);
            match to.checked_sub(from) {
                None => Some(0),
                Some(span) => span.checked_add(1),
            }
        }
    })
}

/// The files `glob` matches, in name order; none is an error naming `pattern`.
fn glob_files(pattern: &str, glob: &str) -> Result<Vec<ShardLocation>> {
    let paths =
        glob::glob(glob).map_err(|err| Error::file(pattern, format!("not a valid glob: {err}")))?;
    let mut files = Vec::new();
    for path in paths {
        let path = path.map_err(|err| {
            Error::file(
                err.path(),
                format!("cannot list while matching {pattern}: {}", err.error()),
            )
        })?;
        if path.is_file() {
            files.push(ShardLocation::File(path));
        }
    }
    if files.is_empty() {
        return Err(Error::file(pattern, format!("no file matches {glob}")));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;

    fn files(dir: &TempDir, names: &[&str]) -> Vec<ShardLocation> {
        names
            .iter()
            .map(|name| ShardLocation::File(dir.path().join(name)))
            .collect()
    }

    fn error(pattern: &str) -> String {
        match shard_locations(pattern, DatasetLimits::DEFAULT.shards) {
            Ok(found) => panic!("{pattern} gave {found:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn numeric_ranges_keep_their_zero_padding() {
        let found = shard_locations(
            "shards/train-{000008..000011}.tar",
            DatasetLimits::DEFAULT.shards,
        )
        .unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "shards/train-000008.tar",
                "shards/train-000009.tar",
                "shards/train-000010.tar",
                "shards/train-000011.tar"
            ]
        );
    }

    #[test]
    fn comma_sets_and_ranges_combine_in_brace_order() {
        let found = shard_locations("{b,a}-{1..2}.tar", DatasetLimits::DEFAULT.shards).unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["b-1.tar", "b-2.tar", "a-1.tar", "a-2.tar"]);
    }

    #[test]
    fn a_plain_path_is_one_shard() {
        assert_eq!(
            shard_locations("data/one.tar", DatasetLimits::DEFAULT.shards).unwrap(),
            [ShardLocation::File("data/one.tar".into())]
        );
    }

    #[test]
    fn globs_match_local_files_in_name_order() {
        let dir = TempDir::new().unwrap();
        for name in ["s-2.tar", "s-10.tar", "s-1.tar", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("s-dir.tar")).unwrap();
        let pattern = format!("{}/s-*.tar", dir.path().display());
        assert_eq!(
            shard_locations(&pattern, DatasetLimits::DEFAULT.shards).unwrap(),
            files(&dir, &["s-1.tar", "s-10.tar", "s-2.tar"])
        );
        let pattern = format!("{}/{{s-2,notes}}.*", dir.path().display());
        assert_eq!(
            shard_locations(&pattern, DatasetLimits::DEFAULT.shards).unwrap(),
            files(&dir, &["s-2.tar", "notes.txt"])
        );
    }

    #[test]
    fn urls_are_expanded_by_braces_only() {
        let found = shard_locations(
            "http://127.0.0.1:8080/shards/s-{0..1}*.tar",
            DatasetLimits::DEFAULT.shards,
        )
        .unwrap();
        assert_eq!(
            found,
            [
                ShardLocation::Url("http://127.0.0.1:8080/shards/s-0*.tar".into()),
                ShardLocation::Url("http://127.0.0.1:8080/shards/s-1*.tar".into())
            ]
        );
        assert!(matches!(
            shard_locations("HTTPS://store/a.tar", DatasetLimits::DEFAULT.shards).unwrap()[..],
            [ShardLocation::Url(_)]
        ));
        assert_eq!(
            shard_locations(
                "https://h/s-{0..1}.tar?sig=${SIG}&k=${KEY}",
                DatasetLimits::DEFAULT.shards
            )
            .unwrap(),
            [
                ShardLocation::Url("https://h/s-0.tar?sig=${SIG}&k=${KEY}".into()),
                ShardLocation::Url("https://h/s-1.tar?sig=${SIG}&k=${KEY}".into())
            ]
        );
    }

    #[test]
    fn empty_and_unmatched_patterns_are_named() {
        assert!(error("").contains("dataset.path: the shard pattern is empty"));
        let dir = TempDir::new().unwrap();
        let pattern = format!("{}/train-*.tar", dir.path().display());
        let msg = error(&pattern);
        assert!(msg.starts_with(&pattern), "{msg}");
        assert!(msg.contains("no file matches"), "{msg}");
        let msg = error("train-{3..1}");
        assert!(msg.starts_with("train-{3..1}"), "{msg}");
    }

    #[test]
    fn braces_are_counted_against_the_cap_before_they_are_expanded() {
        let limit = |pattern: &str, max_shards| {
            shard_locations(pattern, max_shards)
                .map(|found| found.len())
                .map_err(|err| err.to_string())
        };
        assert_eq!(limit("s-{0..9}-{a,b}.tar", 20), Ok(20));
        let msg = limit("s-{0..9}-{a,b}.tar", 19).unwrap_err();
        assert_eq!(
            msg,
            "s-{0..9}-{a,b}.tar: the number of shards dataset.path names is 20, over the \
             limit of 19 (raise it with dataset.limits.shards; see docs/limits.md)"
        );
        let msg = limit("s-{0..99999999}.tar", 100_000).unwrap_err();
        assert!(
            msg.contains("names is 100000000, over the limit of 100000"),
            "{msg}"
        );
        let msg = limit("s-{0..18446744073709551615}.tar", 100_000).unwrap_err();
        assert!(msg.contains("(at least) is 18446744073709551615"), "{msg}");
        let msg = limit("{0..18446744073709551615}{0..18446744073709551615}", 1).unwrap_err();
        assert!(msg.contains("(at least)"), "{msg}");
        let msg = limit("{1..0}{0..18446744073709551615}", 1).unwrap_err();
        assert!(msg.contains("(at least)"), "{msg}");
        let msg = limit("s-{99999999..0}.tar", 100_000).unwrap_err();
        assert!(msg.contains("the pattern names no shard"), "{msg}");
        let msg = limit("s-{0..99999999999999999999}.tar", 1).unwrap_err();
        assert!(msg.contains("cannot expand the braces"), "{msg}");
    }

    #[test]
    fn text_outside_ascii_and_variables_before_a_brace_expand_as_written() {
        let found = shard_locations(
            "https://hôte/${BUCKET}/données-{0..1}-π.tar?s=${SIG}",
            DatasetLimits::DEFAULT.shards,
        )
        .unwrap();
        assert_eq!(
            found,
            [
                ShardLocation::Url("https://hôte/${BUCKET}/données-0-π.tar?s=${SIG}".into()),
                ShardLocation::Url("https://hôte/${BUCKET}/données-1-π.tar?s=${SIG}".into())
            ]
        );
        let found = shard_locations("/d/{é,\u{1F600}}-{9..10}", 9).unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["/d/é-9", "/d/é-10", "/d/\u{1F600}-9", "/d/\u{1F600}-10"]
        );
        let msg = error("s-{0..1}\u{1}.tar");
        assert!(msg.contains("holds a control character"), "{msg}");
    }

    #[test]
    fn a_pattern_of_thousands_of_brace_groups_is_refused_before_it_is_parsed() {
        let pattern = format!("s-{}.tar", "{a,b}".repeat(8000));
        let msg = error(&pattern);
        assert!(
            msg.ends_with("the shard pattern has 8000 brace groups, more than 100"),
            "{}",
            &msg[msg.len().saturating_sub(200)..]
        );
    }

    #[test]
    fn bad_braces_and_other_schemes_are_named() {
        let msg = error("train-{000..009.tar");
        assert!(
            msg.starts_with("train-{000..009.tar: cannot expand"),
            "{msg}"
        );
        let msg = error("s3://bucket/train-{0..1}.tar");
        assert!(msg.contains("s3:// shards cannot be read"), "{msg}");
    }
}
