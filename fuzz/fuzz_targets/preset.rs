//! Fuzzes the preset parser: whatever the text, parsing and planning must return a
//! result (an error naming the problem) without panicking, and any preset that parses
//! must survive a RON round trip unchanged.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let origin = Path::new("fuzz.ron");
    if let Ok(preset) = Preset::from_ron(text, origin) {
        let _ = Plan::from_preset(&preset, Some(origin));
        let again = Preset::from_ron(&preset.to_ron(), origin).expect("a saved preset parses");
        assert_eq!(again, preset);
    }
});
