//! Presets that pass serde but hold numbers no run can use: each is refused when the
//! plan is made, by the CLI as a process, with exit code 2 and one line naming the field
//! and its range, never a panic in the runner.

use crate::common::{loaderbench, stderr};

fn refused(set: &str, field: &str) {
    let output = loaderbench(&["run", "seed-light", "-q", "--set", set]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{set}: {message}");
    assert!(!message.contains("panicked"), "{set}: {message}");
    assert!(
        message.contains(&format!("field `{field}`")) && message.contains("out of range"),
        "{set}: {message}"
    );
}

#[test]
fn numbers_that_broke_a_duration_or_a_capacity_are_refused_with_their_range() {
    refused("worker_timeout_s=1e20", "worker_timeout_s");
    refused("step=fixed(1e25)", "step");
    refused(
        "dataset.shuffle_buffer=18446744073709551615",
        "dataset.shuffle_buffer",
    );
    refused("batch_size=[4, 1000000000000]", "batch_size");
    refused(
        "extra_configs=[(prefetch_factor: 1000000000)]",
        "prefetch_factor",
    );
    refused("window_s=1e300", "window_s");
}

#[test]
fn a_sweep_too_large_to_expand_is_refused_before_it_is_expanded() {
    let many = format!(
        "batch_size=[{}]",
        (1..=1000)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let output = loaderbench(&[
        "run",
        "seed-light",
        "-q",
        "--set",
        &many,
        "--set",
        "num_workers=[0,1,2,3,4,5,6,7,8,9,10,11]",
        "--set",
        "prefetch_factor=[1,2,3,4,5,6,7,8,9,10]",
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("more than 10000 configs"), "{message}");
}
