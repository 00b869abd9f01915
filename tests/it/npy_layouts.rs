//! .npy arrays as numpy saves them: every readable dtype, both byte orders, C and
//! Fortran order, and the (N, H, W), (N, C, H, W) and (N, H, W, C) layouts, written by
//! the setup's Python with numpy and read back pixel by pixel through the public
//! `dataset::open`; plus the arrays that must be refused, with their one-line advice.

use std::path::{Path, PathBuf};
use std::process::Command;

use loaderbench_engine::dataset::{self, Dataset, DatasetKind, DatasetSpec, PixelKind};
use loaderbench_measure::pytorch::python_path;
use tempfile::TempDir;

const N: usize = 2;
const H: usize = 6;
const W: usize = 5;
const DTYPES: [&str; 10] = ["u1", "i1", "i2", "i4", "i8", "u2", "f2", "f4", "f8", "b1"];
const LAYOUTS: [(&str, usize); 7] = [
    ("nhw", 1),
    ("nchw", 1),
    ("nchw", 3),
    ("nchw", 4),
    ("nhwc", 1),
    ("nhwc", 3),
    ("nhwc", 4),
];

/// Writes every dtype × byte order × memory order × layout into `dir` as
/// `{dtype}_{le|be}_{C|F}_{layout}{channels}.npy`, holding value(n, c, h, w) (below).
const GENERATE: &str = r#"
import sys, numpy as np
out, N, H, W = sys.argv[1], 2, 6, 5
for dt in ["u1", "i1", "i2", "i4", "i8", "u2", "f2", "f4", "f8", "b1"]:
    for end, tag in (("<", "le"), (">", "be")):
        for order in "CF":
            for layout, c in [("nhw", 1), ("nchw", 1), ("nchw", 3), ("nchw", 4),
                              ("nhwc", 1), ("nhwc", 3), ("nhwc", 4)]:
                n, cc, h, w = np.indices((N, c, H, W))
                v = ((n * 7 + cc * 5 + h * 3 + w) % 100).astype(np.float64)
                if dt == "b1":
                    v = v % 2
                elif dt[0] == "f":
                    v = v + 0.25
                if layout == "nhw":
                    v = v[:, 0]
                elif layout == "nhwc":
                    v = v.transpose(0, 2, 3, 1)
                a = v.astype(np.dtype(end + dt))
                a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
                np.save(f"{out}/{dt}_{tag}_{order}_{layout}{c}.npy", a)
"#;

/// The value numpy wrote at sample `n`, channel `c`, row `h`, column `w`.
fn value(dtype: &str, n: usize, c: usize, h: usize, w: usize) -> f32 {
    let v = ((n * 7 + c * 5 + h * 3 + w) % 100) as f32;
    match dtype {
        "b1" => v % 2.0,
        "f2" | "f4" | "f8" => v + 0.25,
        _ => v,
    }
}

fn python(script: &str, dir: &Path) {
    let status = Command::new(python_path())
        .args(["-c", script])
        .arg(dir)
        .status()
        .expect("the setup's Python runs");
    assert!(status.success(), "numpy failed to write the arrays");
}

fn open(
    path: PathBuf,
    labels: Option<PathBuf>,
) -> loaderbench_engine::Result<std::sync::Arc<dyn Dataset>> {
    let spec = DatasetSpec {
        kind: DatasetKind::Npy,
        path: Some(path),
        labels,
        ..DatasetSpec::default()
    };
    dataset::open(&spec, None)
}

#[test]
fn every_dtype_order_and_layout_reads_back_its_values() {
    let dir = TempDir::new().unwrap();
    python(GENERATE, dir.path());
    let mut checked = 0;
    for dtype in DTYPES {
        for endian in ["le", "be"] {
            for order in ["C", "F"] {
                for (layout, channels) in LAYOUTS {
                    let name = format!("{dtype}_{endian}_{order}_{layout}{channels}.npy");
                    let data = open(dir.path().join(&name), None)
                        .unwrap_or_else(|err| panic!("{name}: {err}"));
                    let shape = data.shape();
                    assert_eq!(data.len(), N, "{name}");
                    assert_eq!(
                        (shape.channels, shape.height, shape.width),
                        (channels, H, W),
                        "{name}"
                    );
                    let bytes_one = matches!(dtype, "u1" | "b1");
                    let pixel = if bytes_one {
                        PixelKind::U8
                    } else {
                        PixelKind::F32
                    };
                    assert_eq!(shape.pixel, pixel, "{name}");
                    let describe = data.describe();
                    let as_stored = (dtype == "u1" || (dtype == "f4" && endian == "le"))
                        && order == "C"
                        && layout != "nhwc";
                    assert_eq!(
                        !describe.contains(", from"),
                        as_stored,
                        "{name}: {describe}"
                    );
                    let mut pixels = vec![0u8; shape.sample_bytes()];
                    for n in 0..N {
                        assert_eq!(data.read(n, &mut pixels).unwrap(), 0);
                        let mut at = 0;
                        for c in 0..channels {
                            for h in 0..H {
                                for w in 0..W {
                                    let got = match pixel {
                                        PixelKind::U8 => f32::from(pixels[at]),
                                        PixelKind::F32 => f32::from_ne_bytes(
                                            pixels[at * 4..at * 4 + 4].try_into().unwrap(),
                                        ),
                                    };
                                    let want = value(dtype, n, c, h, w);
                                    assert_eq!(got, want, "{name} at ({n}, {c}, {h}, {w})");
                                    at += 1;
                                }
                            }
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 280);
}

#[test]
fn interpretation_is_shown() {
    let dir = TempDir::new().unwrap();
    python(GENERATE, dir.path());
    let describe = |name: &str| open(dir.path().join(name), None).unwrap().describe();
    assert!(describe("u1_le_C_nchw3.npy").ends_with("(2 × 3×6×5 u8)"));
    assert!(
        describe("f8_be_F_nhwc3.npy")
            .ends_with("(2 × 3×6×5 f32, from >float64 N×H×W×C, Fortran order)")
    );
    assert!(describe("i2_le_C_nhw1.npy").ends_with("(2 × 1×6×5 f32, from int16)"));
    assert!(describe("b1_le_C_nhwc4.npy").ends_with("(2 × 4×6×5 u8, from bool N×H×W×C)"));
}

/// Arrays that cannot be read are refused in one line naming the file and the fix.
#[test]
fn other_shapes_and_dtypes_are_refused_with_advice() {
    let dir = TempDir::new().unwrap();
    let script = r#"
import sys, numpy as np
out = sys.argv[1]
np.save(f"{out}/flat.npy", np.zeros((4, 784), np.uint8))
np.save(f"{out}/five.npy", np.zeros((2, 5, 7, 9), np.uint8))
np.save(f"{out}/video.npy", np.zeros((2, 3, 3, 8, 8), np.uint8))
np.save(f"{out}/complex.npy", np.zeros((2, 8, 8), np.complex64))
np.save(f"{out}/text.npy", np.array([["ab"]] * 2))
np.save(f"{out}/images.npy", np.zeros((3, 8, 8), np.uint8))
np.save(f"{out}/float_labels.npy", np.zeros(3, np.float32))
np.save(f"{out}/be_labels.npy", np.array([7, -2, 300], ">i2"))
"#;
    python(script, dir.path());
    let path = |name: &str| dir.path().join(name);
    for (name, expected) in [
        ("flat.npy", "shape (4, 784) has 2 dimensions"),
        ("five.npy", "neither axis 1 nor axis 3"),
        ("video.npy", "has 5 dimensions"),
        ("complex.npy", "unsupported dtype '<c8'"),
        ("text.npy", "unsupported dtype '<U2'"),
    ] {
        let msg = open(path(name), None).err().unwrap().to_string();
        assert!(msg.contains(name) && msg.contains(expected), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.contains("a.reshape(N, H, W)")
                || msg.contains("np.ascontiguousarray(a).astype(np.float32)"),
            "{msg}"
        );
    }
    let msg = open(path("images.npy"), Some(path("float_labels.npy")))
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("float_labels.npy") && msg.contains("astype(np.int64)"),
        "{msg}"
    );
    let data = open(path("images.npy"), Some(path("be_labels.npy"))).unwrap();
    let mut pixels = [0u8; 64];
    let labels: Vec<i64> = (0..3).map(|i| data.read(i, &mut pixels).unwrap()).collect();
    assert_eq!(labels, [7, -2, 300]);
}

#[test]
fn samples_beyond_the_dataset_warn_with_both_numbers() {
    let dir = TempDir::new().unwrap();
    python(
        "import sys, numpy as np; np.save(sys.argv[1] + '/x.npy', np.zeros((3, 4, 4), np.uint8))",
        dir.path(),
    );
    let spec = DatasetSpec {
        kind: DatasetKind::Npy,
        path: Some(dir.path().join("x.npy")),
        ..DatasetSpec::default()
    };
    let data = dataset::open(&spec, Some(10)).unwrap();
    assert_eq!(data.len(), 3);
    let warnings = dataset::open_warnings(Some(10), &*data);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("samples = 10") && warnings[0].contains("holds 3"),
        "{warnings:?}"
    );
    let data = dataset::open(&spec, Some(2)).unwrap();
    assert!(dataset::open_warnings(Some(2), &*data).is_empty());
    assert!(dataset::open_warnings(None, &*data).is_empty());
}
