//! Fuzzes presets from text to what a run is started with: whatever the text, parsing
//! and planning return a result (an error naming the problem) without panicking; any
//! preset that parses survives a RON round trip unchanged; and every config of a plan
//! that is made gives both runtimes settings they accept: our loader's (per rank, with
//! its timeout as a `Duration` and its window) and the PyTorch runtime's request (per
//! rank, as JSON).

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::loader::Shard;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::engine_epoch::{loader_settings, window_rule};
use loaderbench_measure::pytorch::{DatasetRequest, Request};

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let origin = Path::new("fuzz.ron");
    let Ok(preset) = Preset::from_ron(text, origin) else {
        return;
    };
    let again = Preset::from_ron(&preset.to_ron(), origin).expect("a saved preset parses");
    assert_eq!(again, preset);
    let Ok(plan) = Plan::from_preset(&preset, Some(origin)) else {
        return;
    };
    let dataset = DatasetRequest::Idx {
        images: "images.idx".into(),
        labels: "labels.idx".into(),
    };
    for config in &plan.configs {
        let world = config.ranks;
        for rank in 0..world {
            let settings = loader_settings(&plan, config, Shard { rank, world });
            settings.check().expect("a planned config's loader settings pass the loader's checks");
            let request = Request::new(&plan, config, dataset.clone()).for_rank(
                rank,
                world,
                Path::new("/tmp/store"),
            );
            serde_json::to_string(&request).expect("a request encodes");
        }
        let _ = window_rule(&plan, config);
    }
});
