//! Fuzzes the IDX header check: whatever the bytes, `parse_idx` must return without
//! panicking, and a layout it accepts must lie within the bytes it was given, since
//! `Idx::read` slices the file by that layout without checking again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::dataset::{IdxRole, parse_idx};

fuzz_target!(|bytes: &[u8]| {
    for role in [IdxRole::Images, IdxRole::Labels] {
        if let Ok(layout) = parse_idx(bytes, role) {
            let end = layout.data_offset + layout.data_len;
            assert!(end <= bytes.len());
            assert_eq!(layout.dims.iter().product::<usize>(), layout.data_len);
        }
    }
});
