//! Fuzzes the image header check and, where it accepts the bytes, the decode that
//! follows it, with a small pixel cap: neither may panic, and the decode may size no
//! buffer past the cap (a header claiming more is refused by both).

#![no_main]

use libfuzzer_sys::fuzz_target;
use loaderbench_engine::dataset::{
    DatasetLimits, PixelKind, SampleShape, check_image_header, decode_image,
};

const LIMITS: DatasetLimits = DatasetLimits {
    image_pixels: 1 << 20,
    file_bytes: 1 << 20,
    ..DatasetLimits::DEFAULT
};

fuzz_target!(|bytes: &[u8]| {
    if check_image_header(&mut &bytes[..], &LIMITS).is_err() {
        return;
    }
    for channels in [1, 3] {
        let shape = SampleShape {
            channels,
            height: 8,
            width: 8,
            pixel: PixelKind::U8,
        };
        let mut pixels = vec![0; shape.sample_bytes()];
        let _ = decode_image(bytes, shape, &LIMITS, &mut pixels);
    }
});
