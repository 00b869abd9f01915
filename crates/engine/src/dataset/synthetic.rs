//! The synthetic dataset, the default: FashionMNIST-shaped images (N × 1 × 28 × 28 u8, 10
//! balanced classes) generated in memory from a seed, so a benchmark needs no files. Each
//! class is a silhouette family in FashionMNIST's order (T-shirt, trouser, pullover,
//! dress, coat, sandal, shirt, sneaker, bag, ankle boot), drawn bright on a dark
//! background with per-sample jitter of position, scale, aspect, tilt, brightness,
//! shading and noise, so that augmentations (rotation, elastic, blur) have edges to move.
//! The same seed gives the same bytes on every platform and with any `rand` version: the
//! generator is a fixed SplitMix64 and the drawing uses only IEEE-exact arithmetic (no
//! `sin`/`cos`, whose last bits vary between math libraries, and no fused multiply-add).
//! Every sample takes the same count of the generator's numbers, so the samples are drawn
//! by one thread per core, each starting where the one stream stands at its first sample,
//! and the bytes are the ones a single thread draws; the pixel loop is written to compile
//! to vector instructions (AVX2 where the CPU has it). Every round of a tune or a
//! resolve, a process of its own, generates the dataset again before it measures.

use super::files;
use super::{Dataset, PixelKind, SampleShape};
use crate::error::{Error, Result};

/// FashionMNIST's training-set size.
pub const SYNTHETIC_LEN: usize = 60_000;

const SIDE: usize = 28;
const PIXELS: usize = SIDE * SIDE;
const CLASSES: usize = 10;

/// The generator's numbers one sample takes: its pose's, then one per eight pixels of
/// noise, whatever its class.
const DRAWS_PER_SAMPLE: u64 = Pose::DRAWS + PIXELS.div_ceil(8) as u64;

/// The fewest samples worth a thread of their own.
const MIN_PART: usize = 1_000;

/// Generated images and labels, held once and shared through the caller's `Arc`.
pub struct Synthetic {
    pixels: Vec<u8>,
    labels: Vec<u8>,
    seed: u64,
}

impl Synthetic {
    /// Generates `len` samples from `seed`, drawn by as many threads as the machine has
    /// cores.
    pub fn generate(len: usize, seed: u64) -> Result<Self> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::generate_in(len, seed, threads)
    }

    /// Generates `len` samples from `seed` in at most `parts` threads, each drawing a run
    /// of samples from where the one stream stands at its first (every sample takes
    /// [`DRAWS_PER_SAMPLE`] numbers), so the bytes do not depend on `parts`.
    fn generate_in(len: usize, seed: u64, parts: usize) -> Result<Self> {
        let mut pixels = allocate(len)?;
        let mut rng = SplitMix64(seed);
        let labels = balanced_labels(len, &mut rng);
        let first_sample = rng.0;
        let parts = parts.clamp(1, len.div_ceil(MIN_PART).max(1));
        let per_part = len.div_ceil(parts).max(1);
        std::thread::scope(|scope| {
            let images = pixels.chunks_mut(per_part * PIXELS);
            for (part, (images, labels)) in images.zip(labels.chunks(per_part)).enumerate() {
                let before = (part * per_part) as u64 * DRAWS_PER_SAMPLE;
                let mut rng = SplitMix64(crate::splitmix::skip(first_sample, before));
                scope.spawn(move || draw_all(images, labels, &mut rng));
            }
        });
        Ok(Synthetic {
            pixels,
            labels,
            seed,
        })
    }
}

impl Dataset for Synthetic {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn shape(&self) -> SampleShape {
        SampleShape {
            channels: 1,
            height: SIDE,
            width: SIDE,
            pixel: PixelKind::U8,
        }
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        files::check_index(index, self.len())?;
        pixels.copy_from_slice(&self.pixels[index * PIXELS..(index + 1) * PIXELS]);
        Ok(i64::from(self.labels[index]))
    }

    fn describe(&self) -> String {
        format!(
            "synthetic FashionMNIST-shaped ({} × 1×{SIDE}×{SIDE} u8, seed {})",
            self.len(),
            self.seed
        )
    }
}

/// The zeroed pixel buffer for `len` images, or an error (not an abort, nor the OOM
/// killer's end once the zeroes touch every page) when a preset asks for more samples
/// than the memory available holds.
fn allocate(len: usize) -> Result<Vec<u8>> {
    let too_many = || {
        Error::value(format!(
            "samples: {len} synthetic samples of {PIXELS} bytes do not fit in memory"
        ))
    };
    let bytes = len.checked_mul(PIXELS).ok_or_else(too_many)?;
    if let Some(available) = crate::memory::available_memory_bytes()
        && bytes as u64 > available
    {
        return Err(Error::value(format!(
            "samples: {len} synthetic samples of {PIXELS} bytes take {}, more than the {} \
             of memory available",
            bytesize::ByteSize::b(bytes as u64),
            bytesize::ByteSize::b(available)
        )));
    }
    let mut pixels = Vec::new();
    pixels.try_reserve_exact(bytes).map_err(|_| too_many())?;
    pixels.resize(bytes, 0);
    Ok(pixels)
}

/// Labels `i % 10` shuffled, so every class has the same count (give or take one), as in
/// FashionMNIST, and any prefix is mixed.
fn balanced_labels(len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut labels: Vec<u8> = (0..len).map(|i| (i % CLASSES) as u8).collect();
    // Fisher–Yates.
    for i in (1..len).rev() {
        labels.swap(i, rng.below(i + 1));
    }
    labels
}

/// A [`crate::splitmix`] generator and its state.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        crate::splitmix::next(&mut self.0)
    }

    /// Uniform in `[0, n)`; the modulo bias is below 2^-40 for the sizes used here.
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[low, high)`, from the top 24 bits (exact in an f32).
    fn range(&mut self, low: f32, high: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32;
        low + (high - low) * unit
    }
}

/// How one sample is placed and lit: maps pixel centres to the shape's unit square
/// (u right, v down, both in [-1, 1]).
struct Pose {
    centre: (f32, f32),
    /// 1 / the silhouette's half width and half height, in pixels.
    inverse_half_size: (f32, f32),
    cos: f32,
    sin: f32,
    brightness: f32,
    shading: f32,
    noise: f32,
}

impl Pose {
    /// The generator's numbers a pose takes.
    const DRAWS: u64 = 8;

    fn random(rng: &mut SplitMix64) -> Self {
        let scale = rng.range(10.0, 12.5);
        let aspect = rng.range(0.88, 1.12);
        let tilt = rng.range(-0.15, 0.15);
        let (cos, sin) = cos_sin(tilt);
        Pose {
            centre: (14.0 + rng.range(-1.5, 1.5), 14.0 + rng.range(-1.5, 1.5)),
            inverse_half_size: (1.0 / (scale * aspect), aspect / scale),
            cos,
            sin,
            brightness: rng.range(140.0, 255.0),
            shading: rng.range(-0.25, 0.25),
            noise: rng.range(4.0, 16.0),
        }
    }

    /// The shape coordinates of pixel (x, y)'s centre.
    fn unit(&self, x: usize, y: usize) -> (f32, f32) {
        let dx = x as f32 + 0.5 - self.centre.0;
        let dy = y as f32 + 0.5 - self.centre.1;
        let u = (self.cos * dx + self.sin * dy) * self.inverse_half_size.0;
        let v = (self.cos * dy - self.sin * dx) * self.inverse_half_size.1;
        (u, v)
    }
}

/// cos and sin of a small angle (|a| ≤ 0.15) by Taylor series, exact to f32 precision
/// there and the same on every platform.
fn cos_sin(a: f32) -> (f32, f32) {
    let a2 = a * a;
    (
        1.0 - a2 / 2.0 + a2 * a2 / 24.0,
        a - a * a2 / 6.0 + a * a2 * a2 / 120.0,
    )
}

/// Draws one sample per label into `images`, in order.
fn draw_all(images: &mut [u8], labels: &[u8], rng: &mut SplitMix64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { draw_all_avx2(images, labels, rng) };
        return;
    }
    draw_all_portable(images, labels, rng);
}

/// [`draw_all`] compiled for AVX2 (eight floats per instruction; no fused multiply-add,
/// which would round differently).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn draw_all_avx2(images: &mut [u8], labels: &[u8], rng: &mut SplitMix64) {
    draw_all_portable(images, labels, rng);
}

#[inline(always)]
fn draw_all_portable(images: &mut [u8], labels: &[u8], rng: &mut SplitMix64) {
    for (image, &label) in images.chunks_exact_mut(PIXELS).zip(labels) {
        draw(image, label, rng);
    }
}

/// Draws one `class` sample into `image`. The match is outside the pixel loop so that
/// each silhouette gets its own inlined copy of it.
#[inline(always)]
fn draw(image: &mut [u8], class: u8, rng: &mut SplitMix64) {
    let pose = Pose::random(rng);
    match class {
        0 => paint(image, &pose, rng, t_shirt),
        1 => paint(image, &pose, rng, trouser),
        2 => paint(image, &pose, rng, pullover),
        3 => paint(image, &pose, rng, dress),
        4 => paint(image, &pose, rng, coat),
        5 => paint(image, &pose, rng, sandal),
        6 => paint(image, &pose, rng, shirt),
        7 => paint(image, &pose, rng, sneaker),
        8 => paint(image, &pose, rng, bag),
        _ => paint(image, &pose, rng, ankle_boot),
    }
}

/// Paints a silhouette, given as how much ink it puts at (u, v) (0 outside, 1 on plain
/// cloth, in between for seams, patterns and straps), lit and placed by `pose`.
#[inline(always)]
fn paint(image: &mut [u8], pose: &Pose, rng: &mut SplitMix64, ink: impl Fn(f32, f32) -> f32) {
    // One generator call gives the noise of eight pixels.
    let mut noise = [0f32; PIXELS];
    for eight in noise.chunks_exact_mut(8) {
        let mut noise_bits = rng.next_u64();
        for n in eight {
            *n = ((noise_bits & 0xff) as f32 / 255.0 - 0.5) * pose.noise;
            noise_bits >>= 8;
        }
    }
    for (y, row) in image.chunks_exact_mut(SIDE).enumerate() {
        for (x, pixel) in row.iter_mut().enumerate() {
            let (u, v) = pose.unit(x, y);
            // Inked everywhere and then chosen, with no branch, so that the compiler
            // can draw several pixels to an instruction.
            let inked = ink(u, v);
            let ink = if u.abs() <= 1.0 && v.abs() <= 1.0 {
                inked
            } else {
                0.0
            };
            let value = pose.brightness * ink * (1.0 + pose.shading * v) + noise[y * SIDE + x];
            *pixel = value.clamp(0.0, 255.0) as u8;
        }
    }
}

fn inside(low: f32, x: f32, high: f32) -> bool {
    low <= x && x <= high
}

fn rect(u: f32, v: f32, left: f32, right: f32, top: f32, bottom: f32) -> bool {
    inside(left, u, right) && inside(top, v, bottom)
}

/// The squared elliptic radius of (u, v) around a centre: below 1 inside.
fn ellipse(u: f32, v: f32, centre: (f32, f32), radii: (f32, f32)) -> f32 {
    let du = (u - centre.0) / radii.0;
    let dv = (v - centre.1) / radii.1;
    du * du + dv * dv
}

fn ink_if(covered: bool) -> f32 {
    if covered { 1.0 } else { 0.0 }
}

/// A body with a round neckline cut out of its top.
fn top_body(u: f32, v: f32, half_width: f32, top: f32, bottom: f32) -> bool {
    rect(u, v, -half_width, half_width, top, bottom)
        && ellipse(u, v, (0.0, top), (0.22, 0.16)) > 1.0
}

/// Long sleeves hanging from the shoulders, a gap between them and the body.
fn long_sleeves(u: f32, v: f32, body: f32, outer: f32, top: f32, bottom: f32) -> bool {
    let shoulder = rect(u, v, -outer, outer, top, top + 0.3);
    shoulder || (inside(body + 0.08, u.abs(), outer) && inside(top, v, bottom))
}

fn t_shirt(u: f32, v: f32) -> f32 {
    let sleeves =
        rect(u, v, -0.95, 0.95, -0.75, -0.3) && ellipse(u, v, (0.0, -0.75), (0.22, 0.16)) > 1.0;
    ink_if(top_body(u, v, 0.5, -0.75, 0.9) || sleeves)
}

fn trouser(u: f32, v: f32) -> f32 {
    let waist = rect(u, v, -0.45, 0.45, -0.95, -0.7);
    let leg_outer = 0.45 + 0.08 * (v + 0.7);
    let legs = inside(-0.7, v, 0.95) && inside(0.06, u.abs(), leg_outer);
    ink_if(waist || legs)
}

fn pullover(u: f32, v: f32) -> f32 {
    let body = top_body(u, v, 0.5, -0.8, 0.85);
    if body && v > 0.7 {
        return 0.8; // ribbed hem
    }
    ink_if(body || long_sleeves(u, v, 0.5, 0.92, -0.8, 0.8))
}

fn dress(u: f32, v: f32) -> f32 {
    if v < -0.7 {
        return ink_if(inside(-0.95, v, -0.7) && inside(0.12, u.abs(), 0.28)); // straps
    }
    let half_width = if v < -0.35 {
        0.28
    } else {
        0.22 + 0.55 * (v + 0.35)
    };
    ink_if(v <= 0.95 && u.abs() <= half_width)
}

fn coat(u: f32, v: f32) -> f32 {
    let body = rect(u, v, -0.55, 0.55, -0.85, 0.95);
    if body && u.abs() < 0.04 {
        return 0.35; // the opening
    }
    if body && v < -0.45 && u.abs() < 0.3 - 0.5 * (v + 0.85) {
        return 0.6; // lapels
    }
    ink_if(body || long_sleeves(u, v, 0.55, 0.95, -0.85, 0.85))
}

fn sandal(u: f32, v: f32) -> f32 {
    let sole = rect(u, v, -0.95, 0.95, 0.35, 0.5);
    let straps = rect(u, v, -0.85, 0.8, -0.15, 0.35) || rect(u, v, 0.5, 0.8, -0.45, 0.35);
    let on_strap = (u * 4.0 - v * 2.0 + 16.0).floor() as i32 % 2 == 0;
    ink_if(sole || (straps && on_strap))
}

fn shirt(u: f32, v: f32) -> f32 {
    let body = top_body(u, v, 0.48, -0.8, 0.9);
    if body {
        if u.abs() < 0.03 {
            return 0.5; // button placket
        }
        let stripe = (v * 5.0 + 8.0).floor() as i32 % 2 == 0;
        return if stripe { 1.0 } else { 0.65 };
    }
    ink_if(long_sleeves(u, v, 0.48, 0.85, -0.8, 0.75))
}

fn sneaker(u: f32, v: f32) -> f32 {
    // The toe on the left is low, the heel on the right high.
    let top = 0.15 - 0.35 * (u + 0.95) / 1.9;
    let upper = inside(-0.95, u, 0.95) && inside(top, v, 0.3);
    if upper && ellipse(u, v, (0.1, top + 0.1), (0.25, 0.08)) < 1.0 {
        return 0.5; // laces
    }
    ink_if(upper || rect(u, v, -0.95, 0.95, 0.3, 0.5))
}

fn bag(u: f32, v: f32) -> f32 {
    let body = rect(u, v, -0.8, 0.8, -0.25, 0.9);
    if body && inside(-0.02, v, 0.06) {
        return 0.7; // seam
    }
    let ring = ellipse(u, v, (0.0, -0.25), (0.5, 0.65));
    ink_if(body || (v < -0.25 && inside(0.65, ring, 1.0)))
}

fn ankle_boot(u: f32, v: f32) -> f32 {
    let shaft = rect(u, v, 0.0, 0.65, -0.95, 0.5);
    let foot = ellipse(u, v, (-0.3, 0.25), (0.65, 0.3)) < 1.0;
    let sole = rect(u, v, -0.95, 0.7, 0.5, 0.62) || rect(u, v, 0.35, 0.7, 0.5, 0.8);
    ink_if(shaft || foot || sole)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(image: &[u8]) -> (f64, f64) {
        let n = image.len() as f64;
        let mean = image.iter().map(|&p| f64::from(p)).sum::<f64>() / n;
        let var = image
            .iter()
            .map(|&p| (f64::from(p) - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    #[test]
    fn splitmix64_matches_its_reference_output() {
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut rng = SplitMix64(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = Synthetic::generate(200, 7).unwrap();
        let b = Synthetic::generate(200, 7).unwrap();
        let c = Synthetic::generate(200, 8).unwrap();
        assert!(a.pixels == b.pixels && a.labels == b.labels);
        assert_ne!(a.pixels, c.pixels);
        assert_ne!(a.labels, c.labels);
    }

    /// The bytes a seed gives are fixed: these are the ones the first, one-threaded
    /// generator gave, whatever the number of threads that draw them now.
    #[test]
    fn a_seed_gives_the_bytes_it_always_gave() {
        let digest = |bytes: &[u8]| {
            bytes.chunks(8).fold(0u64, |hash, chunk| {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                crate::splitmix::finalize(hash ^ u64::from_le_bytes(word))
            })
        };
        for parts in [1, 2, 3, 7] {
            let data = Synthetic::generate_in(2_003, 11, parts).unwrap();
            assert_eq!(
                (digest(&data.pixels), digest(&data.labels)),
                (2_768_812_262_742_990_475, 352_784_286_086_894_276),
                "{parts} parts"
            );
        }
        let full = Synthetic::generate(SYNTHETIC_LEN, 0).unwrap();
        assert_eq!(
            (digest(&full.pixels), digest(&full.labels)),
            (8_253_883_752_389_195_538, 12_341_109_164_347_987_757)
        );
    }

    #[test]
    fn every_class_s_sample_takes_the_same_count_of_draws() {
        for class in 0..CLASSES as u8 {
            let mut rng = SplitMix64(5);
            draw(&mut [0; PIXELS], class, &mut rng);
            assert_eq!(
                rng.0,
                crate::splitmix::skip(5, DRAWS_PER_SAMPLE),
                "class {class}"
            );
        }
    }

    #[test]
    fn labels_are_balanced_classes() {
        let data = Synthetic::generate(1000, 3).unwrap();
        let mut counts = [0; CLASSES];
        for index in 0..data.len() {
            let label = data.read(index, &mut [0; PIXELS]).unwrap();
            assert!((0..CLASSES as i64).contains(&label));
            counts[label as usize] += 1;
        }
        assert_eq!(counts, [100; CLASSES]);
        assert_ne!(
            data.labels[..10],
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            "shuffled"
        );
    }

    #[test]
    fn images_have_structure_on_a_dark_background() {
        let data = Synthetic::generate(300, 0).unwrap();
        for image in data.pixels.chunks_exact(PIXELS) {
            let (mean, std_dev) = stats(image);
            assert!(std_dev > 40.0, "std dev {std_dev}");
            assert!(mean < 160.0, "mean {mean}");
            let corner = image[0].max(image[27]).max(image[PIXELS - 1]);
            assert!(corner < 20, "corner {corner}");
        }
    }

    #[test]
    fn class_means_differ() {
        let data = Synthetic::generate(1000, 1).unwrap();
        let mut sums = vec![[0f64; PIXELS]; CLASSES];
        for (image, &label) in data.pixels.chunks_exact(PIXELS).zip(&data.labels) {
            for (sum, &pixel) in sums[label as usize].iter_mut().zip(image) {
                *sum += f64::from(pixel) / 100.0;
            }
        }
        for a in 0..CLASSES {
            for b in a + 1..CLASSES {
                let distance = sums[a]
                    .iter()
                    .zip(&sums[b])
                    .map(|(x, y)| (x - y).abs())
                    .sum::<f64>()
                    / PIXELS as f64;
                assert!(distance > 10.0, "classes {a} and {b}: {distance}");
            }
        }
    }

    #[test]
    fn describes_itself_and_refuses_absurd_sizes() {
        let data = Synthetic::generate(12, 5).unwrap();
        assert_eq!(
            data.describe(),
            "synthetic FashionMNIST-shaped (12 × 1×28×28 u8, seed 5)"
        );
        let msg = Synthetic::generate(usize::MAX / 2, 0)
            .err()
            .unwrap()
            .to_string();
        assert!(msg.contains("do not fit in memory"), "{msg}");
        // Twice the memory available, though the address space takes it: reserved,
        // the zeroes touched every page until the OOM killer ended the run.
        let available = crate::memory::available_memory_bytes().expect("MemAvailable");
        let too_many = (2 * available / PIXELS as u64) as usize;
        let msg = Synthetic::generate(too_many, 0).err().unwrap().to_string();
        assert!(msg.contains("of memory available"), "{msg}");
    }
}
