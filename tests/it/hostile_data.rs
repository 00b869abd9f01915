//! Hostile dataset files through the CLI as a process: files whose headers claim more
//! than the dataset's limits allow (an image's pixels, a tar's extension header, a
//! gzipped IDX file's data), a shard cut at a header boundary, and a folder that links
//! back into itself. Each is refused before memory is sized from it, with one error line
//! naming the file and the `dataset.limits` field that raises the cap, never a panic, an
//! abort or a hang; the bombs run under an address-space limit that a decoder sizing
//! its buffer from the header would break.

use std::io::Write;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use tempfile::TempDir;

use crate::common;
use common::{assert_error_line, loaderbench_command, path_str, run_with_deadline, stderr, stdout};

/// The address space a run may take: a tiny run needs under 600 MB, and every bomb
/// below would need more than this on top of it.
const ADDRESS_SPACE_BYTES: u64 = 1 << 30;

/// Runs a tiny copy of seed-light on the dataset `kind` at `path` with `extra` `--set`s,
/// its address space limited to [`ADDRESS_SPACE_BYTES`].
fn run_on(kind: &str, path: &Path, extra: &[&str]) -> Output {
    let out = TempDir::new().unwrap();
    let journal = out.path().join("run.jsonl");
    let mut sets = vec![
        format!("dataset.kind={kind}"),
        format!("dataset.path={}", path_str(path)),
        "num_workers=0".to_owned(),
        "persistent_workers=false".to_owned(),
        "pin_memory=false".to_owned(),
        "epochs=1".to_owned(),
        "batch_size=2".to_owned(),
    ];
    sets.extend(extra.iter().map(|set| (*set).to_owned()));
    let mut args = vec!["run", "seed-light", "-q", "--journal", path_str(&journal)];
    for set in &sets {
        args.extend(["--set", set]);
    }
    let mut command = loaderbench_command(&args);
    common::process::limit_address_space(&mut command, ADDRESS_SPACE_BYTES);
    run_with_deadline(&mut command, Duration::from_secs(120))
}

/// A JPEG of 8×8 pixels, then its frame header rewritten to claim `width` × `height`:
/// a few hundred bytes whose scan holds 8×8 pixels' worth of data.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new(&mut bytes)
        .encode_image(&image::RgbImage::from_pixel(8, 8, image::Rgb([9, 99, 199])))
        .unwrap();
    let sof = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

/// A PNG of 8×8 pixels whose IHDR then claims `width` × `height`.
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    image::RgbImage::from_pixel(8, 8, image::Rgb([9, 99, 199]))
        .write_to(&mut bytes, image::ImageFormat::Png)
        .unwrap();
    let mut bytes = bytes.into_inner();
    bytes[16..20].copy_from_slice(&width.to_be_bytes());
    bytes[20..24].copy_from_slice(&height.to_be_bytes());
    // The chunk's CRC (over its type and data) made right, so only the size lies.
    let mut crc = flate2::Crc::new();
    crc.update(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.sum().to_be_bytes());
    bytes
}

/// An image folder of classes `cat` and `dog` with two good PNGs each, plus `extra`
/// (its name under `cat/`, its bytes).
fn image_folder(extra: Option<(&str, Vec<u8>)>) -> TempDir {
    let dir = TempDir::new().unwrap();
    for class in ["cat", "dog"] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        for i in 0..2u8 {
            let mut png = std::io::Cursor::new(Vec::new());
            image::RgbImage::from_pixel(12, 10, image::Rgb([i, 50, 90]))
                .write_to(&mut png, image::ImageFormat::Png)
                .unwrap();
            std::fs::write(
                dir.path().join(class).join(format!("{i}.png")),
                png.into_inner(),
            )
            .unwrap();
        }
    }
    if let Some((name, bytes)) = extra {
        std::fs::write(dir.path().join("cat").join(name), bytes).unwrap();
    }
    dir
}

#[test]
fn a_jpeg_whose_header_claims_16384_squared_pixels_is_refused_before_decoding() {
    let bomb = jpeg_claiming(16_384, 16_384);
    assert!(bomb.len() < 1_000, "a small file: {} bytes", bomb.len());
    let dir = image_folder(Some(("bomb.jpg", bomb)));
    let output = run_on("image_folder", dir.path(), &[]);
    assert_error_line(
        &output,
        2,
        &[
            "bomb.jpg",
            "16384×16384",
            "268435456",
            "dataset.limits.image_pixels",
        ],
    );
}

#[test]
fn a_png_whose_header_claims_too_many_pixels_is_refused_and_the_limit_raises() {
    let dir = image_folder(Some(("bomb.png", png_claiming(100_000, 100_000))));
    let output = run_on("image_folder", dir.path(), &[]);
    assert_error_line(&output, 2, &["bomb.png", "dataset.limits.image_pixels"]);
    // A small image over a lowered cap is refused the same way: the cap, not the file.
    let plain = image_folder(None);
    let output = run_on(
        "image_folder",
        plain.path(),
        &["dataset.limits.image_pixels=100"],
    );
    assert_error_line(
        &output,
        2,
        &["0.png", "12×10", "dataset.limits.image_pixels"],
    );
}

#[test]
fn an_image_file_over_the_file_bytes_limit_is_refused_before_it_is_read() {
    let dir = image_folder(None);
    let output = run_on(
        "image_folder",
        dir.path(),
        &["dataset.limits.file_bytes=40"],
    );
    assert_error_line(&output, 2, &["0.png", "dataset.limits.file_bytes"]);
}

#[test]
fn an_image_folder_that_links_back_into_itself_is_listed_once_with_a_warning() {
    let dir = image_folder(None);
    std::os::unix::fs::symlink("..", dir.path().join("cat").join("loop")).unwrap();
    let output = run_on("image_folder", dir.path(), &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("warning: ") && err.contains("loop: skipped, a folder already listed"),
        "{err}"
    );
    // Two classes of two images: a folder walked again would add its images again.
    let out = stdout(&output);
    assert!(out.contains("(4 × "), "{out}");
}

/// A tar at `path` of `samples` samples (`{n}.png` + `{n}.cls`), as the `tar` crate
/// writes it (end-of-archive blocks included); returns each member's header position.
fn write_shard(path: &Path, samples: usize) -> Vec<u64> {
    let mut tar = tar::Builder::new(Vec::new());
    let mut headers = Vec::new();
    for n in 0..samples {
        let mut png = std::io::Cursor::new(Vec::new());
        image::RgbImage::from_pixel(6, 4, image::Rgb([n as u8, 9, 9]))
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        for (name, bytes) in [
            (format!("{n:04}.png"), png.into_inner()),
            (format!("{n:04}.cls"), format!("{}", n % 2).into_bytes()),
        ] {
            headers.push(tar.get_ref().len() as u64);
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, &bytes[..]).unwrap();
        }
    }
    std::fs::write(path, tar.into_inner().unwrap()).unwrap();
    headers
}

#[test]
fn a_shard_cut_at_a_header_boundary_is_named_not_read_as_a_shorter_shard() {
    let dir = TempDir::new().unwrap();
    let shard = dir.path().join("shard.tar");
    let headers = write_shard(&shard, 4);
    let whole = std::fs::read(&shard).unwrap();
    let output = run_on("shards", &shard, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    // Cut before the third sample's header, and just before the end-of-archive blocks.
    for cut in [headers[4] as usize, whole.len() - 1024] {
        std::fs::write(&shard, &whole[..cut]).unwrap();
        let output = run_on("shards", &shard, &[]);
        assert_error_line(&output, 2, &["shard.tar", "cut: no end-of-archive blocks"]);
    }
}

/// One tar header block of `kind` for `name`, claiming `size` bytes.
fn tar_header(kind: tar::EntryType, name: &str, size: u64) -> Vec<u8> {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_path(name).unwrap();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_cksum();
    header.as_bytes().to_vec()
}

#[test]
fn a_tar_extension_header_claiming_gigabytes_is_refused_before_it_is_read() {
    let dir = TempDir::new().unwrap();
    for (name, kind) in [
        ("pax.tar", tar::EntryType::XHeader),
        ("longname.tar", tar::EntryType::GNULongName),
    ] {
        let shard = dir.path().join(name);
        let mut bytes = Vec::new();
        write_shard(&shard, 1);
        bytes.extend(tar_header(kind, "././@LongLink", 8 << 30));
        bytes.extend(std::fs::read(&shard).unwrap());
        let mut file = std::fs::File::create(&shard).unwrap();
        file.write_all(&bytes).unwrap();
        // Two gigabytes that read as zeros and take no disk: the "payload" a reader that
        // trusts the header holds in memory.
        file.set_len(2 << 30).unwrap();
        let output = run_on("shards", &shard, &[]);
        assert_error_line(&output, 2, &[name, "8589934592 bytes", "1048576"]);
    }
}

/// `prefix` followed by `zero_mib` MiB of zeros, gzipped. The deflate stream of zeros is
/// one compressed MiB repeated (its back-references, copied after more zeros, still
/// give zeros), so a gigabyte costs a millisecond. The trailer's CRC is left zero: a
/// reader that gets that far has inflated the whole bomb already.
fn gzip_bomb(prefix: &[u8], zero_mib: usize) -> Vec<u8> {
    let mut compress = flate2::Compress::new(flate2::Compression::fast(), false);
    let mut body = Vec::new();
    deflate(&mut compress, prefix, false, &mut body);
    let mut chunk = Vec::new();
    deflate(&mut compress, &vec![0u8; 1 << 20], false, &mut chunk);
    for _ in 0..zero_mib {
        body.extend_from_slice(&chunk);
    }
    deflate(&mut compress, &[], true, &mut body);
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(&body);
    gz.extend_from_slice(&0u32.to_le_bytes());
    let length = (prefix.len() + (zero_mib << 20)) as u32;
    gz.extend_from_slice(&length.to_le_bytes());
    gz
}

/// Deflates all of `input` onto `out`, flushed to a byte boundary (or finished).
fn deflate(compress: &mut flate2::Compress, input: &[u8], finish: bool, out: &mut Vec<u8>) {
    let flush = if finish {
        flate2::FlushCompress::Finish
    } else {
        flate2::FlushCompress::Sync
    };
    let start = compress.total_in();
    loop {
        out.reserve(1 << 16);
        let consumed = (compress.total_in() - start) as usize;
        let status = compress
            .compress_vec(&input[consumed..], out, flush)
            .unwrap();
        let all_in = (compress.total_in() - start) as usize == input.len();
        let flushed = all_in && out.len() < out.capacity();
        if status == flate2::Status::StreamEnd || (!finish && flushed) {
            return;
        }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn idx_header(magic: u8, dims: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0, 0, 8, magic];
    for dim in dims {
        bytes.extend_from_slice(&dim.to_be_bytes());
    }
    bytes
}

/// A folder of a gzipped IDX images file (`images`, already gzipped) and 2 labels.
fn idx_folder(images: Vec<u8>) -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("train-images-idx3-ubyte.gz"), images).unwrap();
    let mut labels = idx_header(1, &[2]);
    labels.extend([0, 1]);
    std::fs::write(dir.path().join("train-labels-idx1-ubyte"), labels).unwrap();
    dir
}

#[test]
fn a_gzipped_idx_file_holding_more_than_its_header_declares_is_refused() {
    let mut two_images = idx_header(3, &[2, 28, 28]);
    two_images.extend([7; 2 * 28 * 28]);
    let dir = idx_folder(gzip_bomb(&two_images, 1024));
    let output = run_on("idx", dir.path(), &[]);
    assert_error_line(
        &output,
        2,
        &[
            "train-images-idx3-ubyte.gz",
            "more data than its header declares (1568 bytes)",
        ],
    );
}

#[test]
fn a_gzipped_idx_header_declaring_more_than_idx_bytes_is_refused_before_inflating() {
    // 5000 × 2048 × 2048 bytes: under the 1 TiB of an absurd header, over 16 GiB.
    let dir = idx_folder(gzip_bomb(&idx_header(3, &[5000, 2048, 2048]), 1024));
    let output = run_on("idx", dir.path(), &[]);
    assert_error_line(
        &output,
        2,
        &[
            "train-images-idx3-ubyte.gz",
            "20971520000",
            "dataset.limits.idx_bytes",
        ],
    );
    // A true file over a lowered cap: the field is named, and raising it is the way.
    let mut two_images = idx_header(3, &[2, 28, 28]);
    two_images.extend([7; 2 * 28 * 28]);
    let dir = idx_folder(gzip(&two_images));
    let output = run_on("idx", dir.path(), &["dataset.limits.idx_bytes=1000"]);
    assert_error_line(&output, 2, &["1568", "dataset.limits.idx_bytes"]);
}
