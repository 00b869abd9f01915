//! Secrets in URLs: kept out of everything we show or save, and out of presets in the
//! first place. [`redact`] turns the user info and the query of every `http(s)://` URL
//! in a text into `***` (`https://***@host/s-0.tar?***`); errors, shard names, results,
//! journals and baselines pass through it. A preset keeps a secret out of its text by
//! naming an environment variable, `${VAR}`, anywhere in a URL: [`expand`] replaces it
//! with the variable's value only when the URL is fetched, so the preset, the results
//! and every message keep `${VAR}`. Credentials for a host can also come from `~/.netrc`
//! (`$NETRC`), which [`netrc_login`] reads for our engine's HTTP reads.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const HIDDEN: &str = "***";

/// `text` with the user info and the query of every `http://` or `https://` URL in it
/// replaced by [`HIDDEN`]; text without a URL comes back borrowed.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("http://") && !text.contains("https://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = find_scheme(rest) {
        let (before, url_on) = rest.split_at(start);
        out.push_str(before);
        let token = url_on
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(url_on.len());
        // Punctuation that ends a sentence or a clause is the message's, not the URL's.
        let end = url_on[..token]
            .trim_end_matches([':', ',', '.', ';', ')'])
            .len();
        let (url, after) = url_on.split_at(end);
        out.push_str(&redact_url(url));
        rest = after;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn find_scheme(text: &str) -> Option<usize> {
    [text.find("http://"), text.find("https://")]
        .into_iter()
        .flatten()
        .min()
}

/// One URL (scheme first, nothing after it) redacted.
fn redact_url(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = url.split_at(after_scheme);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path_on) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(at) => format!("{HIDDEN}@{}", &authority[at + 1..]),
        None => authority.to_owned(),
    };
    let path_on = match path_on.find('?') {
        Some(query) => {
            let fragment = path_on[query..].find('#').map(|f| query + f);
            let tail = fragment.map_or("", |f| &path_on[f..]);
            format!("{}?{HIDDEN}{tail}", &path_on[..query])
        }
        None => path_on.to_owned(),
    };
    format!("{scheme}{host}{path_on}")
}

/// Why a URL's `${VAR}` cannot be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariableError {
    #[error("`${{` without a closing `}}`")]
    Unclosed,
    #[error("the environment variable {0} that the URL names is not set")]
    Unset(String),
}

/// `url` with every `${VAR}` replaced by the environment variable's value, for the one
/// place that fetches it.
pub fn expand(url: &str) -> Result<String, VariableError> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let length = rest[start + 2..].find('}').ok_or(VariableError::Unclosed)?;
        let name = &rest[start + 2..start + 2 + length];
        let value = std::env::var(name).map_err(|_| VariableError::Unset(name.to_owned()))?;
        out.push_str(&value);
        rest = &rest[start + 3 + length..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The login and password `~/.netrc` (or the file `$NETRC` names) gives for `url`'s host,
/// when the URL carries none of its own; a netrc that cannot be read counts as none.
pub fn netrc_login(url: &str) -> Option<(String, String)> {
    let after_scheme = url.find("://")? + 3;
    let rest = &url[after_scheme..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return None;
    }
    let host = authority.split(':').next()?;
    let netrc = netrc::Netrc::new().ok()?;
    let login = netrc
        .hosts
        .get(host)
        .or_else(|| netrc.hosts.get("default"))?;
    Some((login.login.clone(), login.password.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_and_queries_are_hidden_wherever_a_url_appears() {
        assert_eq!(
            redact(
                "error: http://alice:s3cr3tpw@127.0.0.1:42497/nope-0.tar?sig=TOPSECRETSIG: \
                 HTTP 404 Not Found"
            ),
            "error: http://***@127.0.0.1:42497/nope-0.tar?***: HTTP 404 Not Found"
        );
        assert_eq!(redact("(see https://h/a?b=c)."), "(see https://h/a?***).");
        assert_eq!(
            redact("\"https://b.s3.amazonaws.com/s-{0..9}.tar?X-Amz-Signature=ab#frag\""),
            "\"https://b.s3.amazonaws.com/s-{0..9}.tar?***#frag\""
        );
        assert_eq!(
            redact("https://host/a.tar and https://u@h?x"),
            "https://host/a.tar and https://***@h?***"
        );
        assert!(matches!(redact("/data/s-0.tar: cut"), Cow::Borrowed(_)));
    }

    #[test]
    fn environment_variables_fill_a_url_only_when_it_is_fetched() {
        // SAFETY: this test alone sets this variable.
        unsafe { std::env::set_var("LOADERBENCH_TEST_SIG", "s3cr3t") };
        assert_eq!(
            expand("https://h/s-0.tar?sig=${LOADERBENCH_TEST_SIG}").unwrap(),
            "https://h/s-0.tar?sig=s3cr3t"
        );
        assert_eq!(
            expand("https://h/s.tar?sig=${LOADERBENCH_UNSET_SIG}"),
            Err(VariableError::Unset("LOADERBENCH_UNSET_SIG".into()))
        );
        assert_eq!(expand("https://h/${OPEN"), Err(VariableError::Unclosed));
    }
}
