//! Fuzzes the .npy header parser: whatever the bytes, `parse_npy_header` must return
//! without panicking, and a header it accepts must promise no more data than follows it,
//! since `Npy::read` indexes the mapped file by that header without checking again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::dataset::parse_npy_header;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(header) = parse_npy_header(bytes) {
        let elements: usize = header.shape.iter().product();
        assert!(header.data_offset <= bytes.len());
        assert!(header.data_offset + elements * header.dtype.size <= bytes.len());
    }
});
