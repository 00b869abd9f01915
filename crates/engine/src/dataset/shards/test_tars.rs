//! Tar shards for the tests: members written with the `tar` crate, compressed with each
//! compression shards may have, and small images.

use std::io::Write;
use std::path::Path;

use image::{Rgb, RgbImage};

use super::compression::Compression;

/// `bytes` compressed with `compression`, as its command-line tool writes it.
pub fn compressed(bytes: &[u8], compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => bytes.to_vec(),
        Compression::Gzip => {
            let mut out = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            out.write_all(bytes).unwrap();
            out.finish().unwrap()
        }
        Compression::Bzip2 => {
            let mut out = bzip2::write::BzEncoder::new(Vec::new(), Default::default());
            out.write_all(bytes).unwrap();
            out.finish().unwrap()
        }
        Compression::Xz => {
            let mut out = liblzma::write::XzEncoder::new(Vec::new(), 6);
            out.write_all(bytes).unwrap();
            out.finish().unwrap()
        }
    }
}

/// Writes a tar at `path` holding `members` (name, bytes) in order.
pub fn write_tar(path: &Path, members: &[(String, Vec<u8>)]) {
    let mut builder = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, &bytes[..]).unwrap();
    }
    builder.into_inner().unwrap();
}

/// A PNG of `width` × `height` pixels of one colour.
pub fn png(width: u32, height: u32, colour: [u8; 3]) -> Vec<u8> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    RgbImage::from_pixel(width, height, Rgb(colour))
        .write_to(&mut bytes, image::ImageFormat::Png)
        .unwrap();
    bytes.into_inner()
}

/// The members of `count` samples `{first+i:06}.png` + `.cls`, sample i coloured by its
/// number and labelled `i % 3`.
pub fn samples(first: usize, count: usize) -> Vec<(String, Vec<u8>)> {
    (first..first + count)
        .flat_map(|n| {
            let colour = [(n * 7 % 256) as u8, (n * 13 % 256) as u8, 9];
            [
                (format!("{n:06}.png"), png(3, 2, colour)),
                (format!("{n:06}.cls"), format!("{}", n % 3).into_bytes()),
            ]
        })
        .collect()
}
