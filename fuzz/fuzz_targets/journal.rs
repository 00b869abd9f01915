//! Fuzzes the journal reader: whatever the bytes, `parse_journal` must return without
//! panicking, and what it keeps of a journal whose last line is cut must be what the
//! complete lines before the cut hold (the configs they give, in their order).

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use loaderbench_measure::parse_journal;

fuzz_target!(|bytes: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let Ok(run) = parse_journal(path, bytes) else {
        return;
    };
    let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    if let Ok(complete) = parse_journal(path, &bytes[..=last_newline]) {
        assert!(run.results.starts_with(&complete.results));
    }
});
