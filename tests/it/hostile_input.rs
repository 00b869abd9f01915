//! Input that parses but holds numbers no run can use, through the CLI as a process:
//! a preset's are refused when the plan is made, a results file's claimed counts before
//! anything is sized from them; each with exit code 2 and one line naming the field or
//! the file, never a panic.

use crate::common::{assert_error_line, json_file, loaderbench, path_str, run_args, stderr};

fn refused(set: &str, field: &str) {
    let output = loaderbench(&run_args("seed-light", &[set], &[]));
    assert_error_line(&output, 2, &[&format!("field `{field}`"), "out of range"]);
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
        "extra_configs[0].prefetch_factor",
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
    let sets = [
        many.as_str(),
        "num_workers=[0,1,2,3,4,5,6,7,8,9,10,11]",
        "prefetch_factor=[1,2,3,4,5,6,7,8,9,10]",
    ];
    let output = loaderbench(&run_args("seed-light", &sets, &[]));
    assert_error_line(&output, 2, &["more than 10000 configs"]);
}

/// A tiny run's results, saved in `dir` as `run.json`.
fn saved_run(dir: &std::path::Path) -> std::path::PathBuf {
    let saved = dir.join("run.json");
    let sets = ["samples=256", "epochs=1", "num_workers=0"];
    let output = loaderbench(&run_args(
        "seed-light",
        &sets,
        &["--json", path_str(&saved)],
    ));
    assert!(output.status.success(), "{}", stderr(&output));
    saved
}

#[test]
fn a_results_file_claiming_a_billion_epochs_is_refused_before_anything_is_sized() {
    let dir = tempfile::TempDir::new().unwrap();
    let saved = saved_run(dir.path());
    let mut run = json_file(&saved);
    run["epochs"] = 1_000_000_000.into();
    let claiming = dir.path().join("claims.json");
    std::fs::write(&claiming, serde_json::to_vec(&run).unwrap()).unwrap();
    let output = loaderbench(&["report", path_str(&claiming)]);
    assert_error_line(
        &output,
        2,
        &["claims.json: claims field `epochs`: 1000000000 is out of range"],
    );
    let output = loaderbench(&["report", path_str(&saved)]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn time_limits_and_sizes_past_their_range_are_refused_naming_the_flag() {
    // An instant a hundred billion years away overflowed and panicked.
    let output = loaderbench(&["tune", "seed-light", "--budget", "500000000000years"]);
    assert_error_line(&output, 2, &["--budget", "over a day"]);
    let output = loaderbench(&["tune", "seed-light", "--budget", "0s"]);
    assert_error_line(&output, 2, &["--budget", "under a second"]);
    let output = loaderbench(&["tune", "seed-light", "--budget=-5"]);
    assert_error_line(&output, 2, &["--budget", "0 seconds or more"]);
    let output = loaderbench(&["tune", "seed-light", "--budget", "90x"]);
    assert_error_line(&output, 2, &["--budget", "write a time such as 90s"]);
    let output = loaderbench(&["tune", "seed-light", "--budget", "86401"]);
    assert_error_line(&output, 2, &["--budget", "over a day"]);
    let output = loaderbench(&["resolve", "any.jsonl", "--resolve-for", "2days"]);
    assert_error_line(&output, 2, &["--resolve-for", "over a day"]);
    let args = run_args(
        "seed-light",
        &[],
        &["--recommend", "--resolve-for", "9999years"],
    );
    assert_error_line(&loaderbench(&args), 2, &["--resolve-for", "over a day"]);
    // `report` held the limit to no range: 0 B, and sizes past u64 saturated.
    for limit in ["0B", "99999999999999999999EiB"] {
        let output = loaderbench(&["report", "any.json", "--memory-limit", limit]);
        assert_error_line(
            &output,
            2,
            &[&format!("--memory-limit {limit}"), "out of range"],
        );
    }
}

#[test]
fn a_results_file_whose_measurements_no_run_gives_is_refused_naming_the_value() {
    let dir = tempfile::TempDir::new().unwrap();
    let run = json_file(&saved_run(dir.path()));
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut run = run.clone();
        edit(&mut run);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
        let mut args = vec!["report", path_str(&path)];
        // The PNG's charts drew an epoch of 1e307 s for minutes, gigabytes deep.
        let png = dir.path().join("edited.png");
        args.extend(["--png", path_str(&png)]);
        loaderbench(&args)
    };
    // A config the run does not have: the table dropped it without a word.
    let output = edited(&|run| run["results"][0]["config_index"] = 99.into());
    assert_error_line(
        &output,
        2,
        &["edited.json: results[0]: names config 99 of a run of"],
    );
    // A negative epoch: the analysis said persistent workers saved 5 s an epoch.
    let output = edited(&|run| run["results"][0]["epochs"][0]["seconds"] = (-5.0).into());
    assert_error_line(
        &output,
        2,
        &["results[0]: epoch 1: seconds is -5, not a time"],
    );
    let output = edited(&|run| run["results"][0]["epochs"][0]["seconds"] = 1e307.into());
    assert_error_line(
        &output,
        2,
        &["seconds is 1e307, not a time a run measures (0 to 1e7 s)"],
    );
    // What measuring a config took: resolve would fit no round beside it, and the
    // verdict would ask for "infh" of measuring.
    let output = edited(&|run| run["results"][0]["took_s"] = 1e308.into());
    assert_error_line(
        &output,
        2,
        &["results[0]: took_s is 1e308, not a time a run measures"],
    );
    let output = edited(&|run| {
        run["results"][0]["epochs"][0]["batches"] = u64::MAX.into();
    });
    assert_error_line(&output, 2, &["batches is 18446744073709551615, over the"]);
}

#[test]
fn a_plan_of_thousands_of_configs_is_labelled_and_extra_configs_count_toward_the_cap() {
    // Labelling each config went over every config for each knob of each label: a
    // sweep of 2,000 took over an hour to validate.
    let workers = (0..20).map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let sizes = (1..=100)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let (workers, sizes) = (
        format!("num_workers={workers}"),
        format!("batch_size={sizes}"),
    );
    let sets = [
        workers.as_str(),
        &sizes,
        "persistent_workers=false",
        "pin_memory=false",
    ];
    let mut args = vec!["validate", "seed-light"];
    for set in &sets {
        args.extend(["--set", set]);
    }
    let output = loaderbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("ok, 2000 config(s)"), "{text}");
    assert!(text.contains("\n  nw=19 bs=1\n"), "{text}");
    let extra: Vec<String> = (1..=10_001).map(|n| format!("(batch_size: {n})")).collect();
    let dir = tempfile::TempDir::new().unwrap();
    let preset = dir.path().join("extra.ron");
    let text = format!(
        "(version: 1, name: \"extra\", dataset: (kind: synthetic), extra_configs: [{}])",
        extra.join(",")
    );
    std::fs::write(&preset, text).unwrap();
    let output = loaderbench(&["validate", path_str(&preset)]);
    assert_error_line(
        &output,
        2,
        &["field `extra_configs`: lists 10001 configs, more than the 10000"],
    );
}

#[test]
fn normalize_stats_for_other_channels_are_refused_after_the_warning_that_explains_them() {
    // Colour photos with a size given but the channels left at 1, and RGB statistics:
    // `validate` passed it and the run failed inside its first config.
    let dir = tempfile::TempDir::new().unwrap();
    for class in ["cat", "dog"] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        image::RgbImage::from_pixel(12, 10, image::Rgb([200, 30, 90]))
            .save(dir.path().join(class).join("a.png"))
            .unwrap();
    }
    let folder = format!(
        "dataset=(kind: image_folder, path: {:?}, image_size: [8, 8])",
        path_str(dir.path())
    );
    let sets = [
        folder.as_str(),
        "normalize=(mean: [0.5, 0.5, 0.5], std: [0.25, 0.25, 0.25])",
        "batch_size=[2]",
    ];
    let mut validate = vec!["validate", "seed-light"];
    for set in &sets {
        validate.extend(["--set", set]);
    }
    for args in [validate, run_args("seed-light", &sets, &[])] {
        let output = loaderbench(&args);
        assert_error_line(
            &output,
            2,
            &["field `normalize.mean`: 3 values, but the dataset's images have 1 channel"],
        );
        let said = stderr(&output);
        let warning = said
            .find("12×10 colour images (the first's header) are read as 1×8×8, the default of dataset.channels")
            .unwrap_or_else(|| panic!("{said}"));
        assert!(warning < said.find("error:").unwrap(), "{said}");
        // Refused before a journal was made: none is named.
        assert!(!said.contains("journal: "), "{said}");
    }
}
