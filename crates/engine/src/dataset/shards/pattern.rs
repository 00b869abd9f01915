//! A shard dataset's `path` turned into the ordered list of its shards: brace expansion
//! first (numeric ranges keep their zero padding, `{000000..000009}`; comma sets,
//! `{train,val}`), in the order the braces give, then, for local paths, globs (`*`, `?`,
//! `[..]`), each glob's matches in name order. `http://` and `https://` patterns are
//! expanded by braces only and kept as URLs (a web server cannot be listed). A pattern
//! that expands to nothing, or a glob that matches no file, is an error naming it. An
//! environment variable, `${SIG}`, is not a brace set: it stays for the fetch to fill.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
            ShardLocation::Url(url) => crate::secrets::expand(url),
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

/// The shards `pattern` names, in reading order.
pub fn shard_locations(pattern: &str) -> Result<Vec<ShardLocation>> {
    if pattern.trim().is_empty() {
        return Err(Error::value("dataset.path: the shard pattern is empty"));
    }
    let expanded = expand_braces(&hide_variables(pattern))?;
    let mut locations = Vec::new();
    for name in expanded.iter().map(|name| show_variables(name)) {
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
    Ok(locations)
}

fn is_url(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn has_glob(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// Private-use characters that stand for `${` and `}` of an environment variable
/// ([`crate::secrets::expand`]) while braces are expanded, so that `${SIG}` is not read
/// as a brace set.
const VARIABLE_OPEN: char = '\u{E000}';
const VARIABLE_CLOSE: char = '\u{E001}';

fn hide_variables(pattern: &str) -> String {
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
    out
}

fn show_variables(name: &str) -> String {
    name.replace(VARIABLE_OPEN, "${")
        .replace(VARIABLE_CLOSE, "}")
}

/// The strings the pattern's braces expand to (the pattern itself when it has none).
fn expand_braces(pattern: &str) -> Result<Vec<String>> {
    if !pattern.contains(['{', '}']) {
        return Ok(vec![pattern.to_owned()]);
    }
    bracoxide::explode(pattern)
        .map_err(|err| Error::file(pattern, format!("cannot expand the braces: {err}")))
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
        match shard_locations(pattern) {
            Ok(found) => panic!("{pattern} gave {found:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn numeric_ranges_keep_their_zero_padding() {
        let found = shard_locations("shards/train-{000008..000011}.tar").unwrap();
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
        let found = shard_locations("{b,a}-{1..2}.tar").unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["b-1.tar", "b-2.tar", "a-1.tar", "a-2.tar"]);
    }

    #[test]
    fn a_plain_path_is_one_shard() {
        assert_eq!(
            shard_locations("data/one.tar").unwrap(),
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
            shard_locations(&pattern).unwrap(),
            files(&dir, &["s-1.tar", "s-10.tar", "s-2.tar"])
        );
        let pattern = format!("{}/{{s-2,notes}}.*", dir.path().display());
        assert_eq!(
            shard_locations(&pattern).unwrap(),
            files(&dir, &["s-2.tar", "notes.txt"])
        );
    }

    #[test]
    fn urls_are_expanded_by_braces_only() {
        let found = shard_locations("http://127.0.0.1:8080/shards/s-{0..1}*.tar").unwrap();
        assert_eq!(
            found,
            [
                ShardLocation::Url("http://127.0.0.1:8080/shards/s-0*.tar".into()),
                ShardLocation::Url("http://127.0.0.1:8080/shards/s-1*.tar".into())
            ]
        );
        assert!(matches!(
            shard_locations("HTTPS://store/a.tar").unwrap()[..],
            [ShardLocation::Url(_)]
        ));
        assert_eq!(
            shard_locations("https://h/s-{0..1}.tar?sig=${SIG}&k=${KEY}").unwrap(),
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
