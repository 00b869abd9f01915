//! Fuzzes the shard index pass: whatever the bytes, indexing them as a local shard must
//! return without panicking or allocating past its caps, and every image it accepts must
//! lie within the bytes, since reading slices the shard by those ranges without checking
//! the tar headers again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::dataset::{DatasetLimits, index_shard_bytes};

fuzz_target!(|bytes: &[u8]| {
    if let Ok(images) = index_shard_bytes(bytes, &DatasetLimits::DEFAULT) {
        assert!(!images.is_empty());
        for image in images {
            assert!(image.start <= image.end && image.end <= bytes.len() as u64);
        }
    }
});
