//! The engine, the bottom layer: what a benchmark file says ([`preset`]) and what it
//! resolves to ([`plan`]), the datasets, the libtorch transform pipelines, the loader
//! with PyTorch DataLoader semantics and its worker kinds, the device and the training
//! step, and the machine they run on. It knows nothing of measuring runs, results,
//! analysis or any front end; see ARCHITECTURE.md for the layers above it.

pub mod atomic_file;
pub mod builtin;
pub mod cancel;
pub mod child_processes;
pub mod dataset;
pub mod device;
pub mod error;
pub mod loader;
pub mod machine;
pub mod memory;
mod named_values;
pub mod page_cache;
mod pair;
pub mod plan;
pub mod preset;
pub mod python_call;
pub mod secrets;
mod splitmix;
pub mod step;
pub mod transform;

pub use error::{Error, Result};

/// `count` of `noun` in words, the noun plural but for one: "1 shard", "4 shards",
/// "2 classes".
pub fn counted(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        _ if noun.ends_with('s') => format!("{count} {noun}es"),
        _ => format!("{count} {noun}s"),
    }
}

/// Seconds as every table and sentence writes them, without the unit: two decimals,
/// and below 0.1 s two significant digits (`0.035`, `0.0014`), so that a millisecond
/// reads as one rather than as `0.00`.
pub fn seconds(s: f64) -> String {
    if s.abs() > 0.0 && s.abs() < 0.1 && s.is_finite() {
        let decimals = (1.0 - s.abs().log10().floor()) as usize;
        format!("{s:.decimals$}")
    } else {
        format!("{s:.2}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seconds_keep_two_significant_digits_below_a_tenth() {
        let written: Vec<String> = [12.345, 0.5, 0.1, 0.035, 0.0014, -0.0014, 0.0]
            .into_iter()
            .map(super::seconds)
            .collect();
        assert_eq!(
            written,
            [
                "12.35", "0.50", "0.10", "0.035", "0.0014", "-0.0014", "0.00"
            ]
        );
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::counted(1, "shard"), "1 shard");
        assert_eq!(super::counted(0, "worker"), "0 workers");
        assert_eq!(super::counted(2, "class"), "2 classes");
    }
}
