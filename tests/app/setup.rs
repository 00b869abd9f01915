//! The setup panel through egui_kittest: every knob of the knob table has its field,
//! those typed as text mark a bad value, and every preset field beyond the sweep knobs is
//! edited by its label and changes the preset (name, description, shuffle, seed,
//! drop_last, normalize, worker timeout, training step (each kind's fields, the model's
//! file with its Browse button), planned epochs, the labels file, tar shards' fields,
//! image-folder channels and size), a value that does not parse is marked beside its
//! field and leaves the last good value, an extra config is added from the current
//! values, a custom pipeline's ops are reordered, and Browse where no file dialog can
//! open says why.

use std::path::Path;
use std::time::{Duration, Instant};

use egui::Key;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use loaderbench_engine::dataset::DatasetKind;
use loaderbench_engine::plan::KNOBS;
use loaderbench_engine::preset::{IntraOpThreads, Preset, RunOrder};
use loaderbench_engine::step::StepSpec;
use loaderbench_engine::transform::{Op, PipelineSpec};
use loaderbench_gui::{App, Launch};

use crate::common;
use common::gui::{choose, click, step_until, type_into, type_into_role};

fn harness(dir: &Path, preset: Option<String>) -> Harness<'static, App> {
    let launch = Launch {
        preset,
        run_now: false,
        journal_dir: Some(dir.to_path_buf()),
        ..Launch::default()
    };
    common::gui::builder()
        .with_size([1280.0, 2000.0])
        .build_eframe(move |cc| App::new(cc, launch))
}

fn marked(harness: &Harness<'_, App>, problem: &str) -> bool {
    harness.query_by_label_contains(problem).is_some()
}

/// Steps the harness until `problem` is marked (a check off the frame answered), failing
/// after a generous limit or if one frame takes longer than a second.
fn wait_for_mark(harness: &mut Harness<'_, App>, problem: &str) {
    common::wait_until(
        Duration::from_secs(30),
        &format!("`{problem}` marked"),
        || {
            if marked(harness, problem) {
                return true;
            }
            let frame = Instant::now();
            harness.step();
            assert!(
                frame.elapsed() < Duration::from_secs(1),
                "a frame took {:?}",
                frame.elapsed()
            );
            false
        },
    );
}

/// The app on seed-light, with journals in a folder of its own.
fn setup_panel() -> (tempfile::TempDir, Harness<'static, App>) {
    let dir = tempfile::tempdir().unwrap();
    let harness = harness(dir.path(), None);
    (dir, harness)
}

fn preset(harness: &Harness<'_, App>) -> Preset {
    harness.state().preset().clone()
}

/// What the setup panel shows first for a field: a menu's `choice` picked (its label and
/// the choice), or nothing.
type Picked = Option<(&'static str, &'static str)>;

/// What typing into a field does to the preset.
type Edit = fn(&mut Preset);

/// A field of the preset that a check box toggles.
type Toggled = fn(&Preset) -> bool;

/// Each field typed into by its label, in a panel of its own (after `picked`), changes
/// the preset as `edit` changes it, and nothing else.
#[test]
fn fields_typed_into_by_label_edit_the_preset() {
    let cases: [(Picked, &str, &str, Edit); 6] = [
        (None, "name", "mine", |p| p.name = "mine".to_owned()),
        (None, "seed", "42", |p| p.seed = 42),
        (None, "normalize mean", "0.5, 0.25, 0.125", |p| {
            p.normalize.mean = vec![0.5, 0.25, 0.125];
        }),
        (None, "normalize std", "0.2,0.3,0.4", |p| {
            p.normalize.std = vec![0.2, 0.3, 0.4];
        }),
        (None, "worker timeout (s)", "30", |p| {
            p.worker_timeout_s = 30.0
        }),
        (
            Some(("training step", "mlp")),
            "step hidden units",
            "64",
            |p| p.step = StepSpec::Mlp { hidden: 64 },
        ),
    ];
    for (picked, label, text, edit) in cases {
        let (_dir, mut harness) = setup_panel();
        if let Some((menu, choice)) = picked {
            choose(&mut harness, menu, choice);
        }
        let mut expected = preset(&harness);
        edit(&mut expected);
        type_into(&mut harness, label, text);
        assert_eq!(preset(&harness), expected, "`{text}` typed into {label}");
    }
}

/// A bad value typed into a field (each of `typed` in turn, after `picked`), or a field
/// the choice needs left empty, is marked with the problem, in a panel of its own.
#[test]
fn bad_values_are_marked_with_the_problem() {
    let cases: [(Picked, &str, &[&str], &str); 5] = [
        (None, "name", &["mine", ""], "give the preset a name"),
        (
            None,
            "normalize std",
            &["0.2,0"],
            "a standard deviation must be above zero",
        ),
        (
            None,
            "worker timeout (s)",
            &["-1"],
            "not a number of seconds above zero",
        ),
        (
            Some(("training step", "fixed")),
            "step ms per batch",
            &["-3"],
            "fixed(MS) -3 is out of range: it must be from 0 to 3600000 milliseconds",
        ),
        (
            Some(("training step", "model")),
            "model file",
            &[],
            "give the path of a TorchScript file",
        ),
    ];
    for (picked, label, typed, problem) in cases {
        let (_dir, mut harness) = setup_panel();
        if let Some((menu, choice)) = picked {
            choose(&mut harness, menu, choice);
        }
        for text in typed {
            type_into(&mut harness, label, text);
        }
        assert!(marked(&harness, problem), "{label} {typed:?}: `{problem}`");
    }
}

#[test]
fn a_seed_that_is_not_a_number_is_marked_until_corrected_and_the_last_good_value_stays() {
    let (_dir, mut harness) = setup_panel();
    type_into(&mut harness, "seed", "42");
    type_into(&mut harness, "seed", "x");
    assert!(marked(&harness, "`x` is not a whole number"));
    assert_eq!(preset(&harness).seed, 42, "the last good value stays");
    type_into(&mut harness, "seed", "7");
    assert!(!marked(&harness, "`x` is not a whole number"));
    assert_eq!(preset(&harness).seed, 7);
}

#[test]
fn the_description_is_edited_by_label_on_several_lines() {
    let (_dir, mut harness) = setup_panel();
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "description",
        "two\nlines",
    );
    assert_eq!(preset(&harness).description, "two\nlines");
}

/// Shuffle and drop last, each a check box clicked by its label, toggle their field.
#[test]
fn check_boxes_toggle_their_field_by_label() {
    let cases: [(&str, Toggled); 2] = [("shuffle", |p| p.shuffle), ("drop last", |p| p.drop_last)];
    for (label, field) in cases {
        let (_dir, mut harness) = setup_panel();
        let before = field(&preset(&harness));
        harness.get_by_role_and_label(Role::CheckBox, label).click();
        harness.run_steps(2);
        assert_eq!(field(&preset(&harness)), !before, "{label}");
    }
}

#[test]
fn a_fixed_training_step_is_picked_and_its_milliseconds_edited() {
    let (_dir, mut harness) = setup_panel();
    choose(&mut harness, "training step", "fixed");
    assert_eq!(preset(&harness).step, StepSpec::Fixed(5.0));
    type_into(&mut harness, "step ms per batch", "12.5");
    assert_eq!(preset(&harness).step, StepSpec::Fixed(12.5));
}

#[test]
fn a_model_step_is_picked_with_its_file_and_learning_rate() {
    let (dir, mut harness) = setup_panel();
    let browse_buttons = harness.query_all_by_label("Browse…").count();
    choose(&mut harness, "training step", "model");
    assert_eq!(
        harness.query_all_by_label("Browse…").count(),
        browse_buttons + 1,
        "the model file has its Browse button"
    );
    let model = dir.path().join("model.pt");
    type_into(&mut harness, "model file", model.to_str().unwrap());
    assert!(marked(&harness, "model.pt does not exist"));
    std::fs::write(&model, b"written by the test").unwrap();
    type_into(&mut harness, "learning rate", "0.5");
    assert_eq!(
        preset(&harness).step,
        StepSpec::Model {
            path: model.clone(),
            lr: 0.5
        }
    );
    assert!(!marked(&harness, "does not exist"));
    type_into(&mut harness, "learning rate", "-1");
    assert!(marked(&harness, "model lr -1 is out of range"));
    assert_eq!(
        preset(&harness).step,
        StepSpec::Model {
            path: model,
            lr: 0.5
        }
    );
}

#[test]
fn a_python_step_is_picked_with_its_module_factory_and_args() {
    let (dir, mut harness) = setup_panel();
    choose(&mut harness, "training step", "python");
    let module = dir.path().join("my_step.py");
    std::fs::write(&module, "def make_step(lr):\n    return print\n").unwrap();
    type_into(&mut harness, "step module", module.to_str().unwrap());
    type_into(&mut harness, "step factory", "build");
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "step args",
        "lr = 0.05",
    );
    let StepSpec::Python {
        path,
        factory,
        args,
    } = preset(&harness).step
    else {
        panic!("a python step");
    };
    assert_eq!((path, factory.as_str()), (module, "build"));
    assert_eq!(args["lr"], 0.05);
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "step args",
        "lr 0.05",
    );
    assert!(marked(&harness, "line 1: expected `key = value`"));
    type_into(&mut harness, "step factory", "no good");
    assert!(marked(&harness, "`no good` is not a Python function name"));
}

#[test]
fn the_planned_epochs_are_edited_by_label() {
    let (_dir, mut harness) = setup_panel();
    type_into_role(&mut harness, Role::SpinButton, "planned epochs", "90");
    harness.key_press(Key::Enter);
    harness.run_steps(2);
    assert_eq!(preset(&harness).planned_epochs, 90);
}

#[test]
fn an_idx_labels_file_is_edited_by_label_and_a_missing_one_is_marked() {
    let (_dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "idx");
    type_into(&mut harness, "labels file", "/no/such/labels");
    assert_eq!(
        preset(&harness).dataset.labels.as_deref(),
        Some(Path::new("/no/such/labels"))
    );
    assert!(marked(&harness, "/no/such/labels does not exist"));
}

/// A dataset kind picked before its path: Run and Tune wait, and Ctrl+R says why, until
/// the path names a folder that exists.
#[test]
fn a_run_waits_for_a_dataset_path_that_exists() {
    let (dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "image folder");
    assert!(marked(&harness, "this dataset needs a path"));
    // A button's label holds its shortcut too (`Run Ctrl+R`).
    let disabled = |harness: &Harness<'_, App>, name: &'static str| {
        harness
            .get_by(move |node| {
                node.role() == Role::Button && node.label().is_some_and(|l| l.starts_with(name))
            })
            .accesskit_node()
            .is_disabled()
    };
    assert!(disabled(&harness, "Run") && disabled(&harness, "Tune"));
    common::gui::start_the_run(&mut harness);
    assert_eq!(harness.state().phase(), None, "no run started");
    let said =
        |harness: &Harness<'_, App>| harness.state().messages().last().map(|m| m.text.clone());
    assert_eq!(
        said(&harness).as_deref(),
        Some("Fix the fields marked in the side panel first.")
    );
    let folder = dir.path().join("folder");
    type_into(&mut harness, "path", folder.to_str().unwrap());
    assert!(marked(&harness, "folder does not exist"));
    assert!(disabled(&harness, "Run"));
    std::fs::create_dir(&folder).unwrap();
    harness.run_steps(2);
    assert!(!marked(&harness, "does not exist"));
    assert!(!disabled(&harness, "Run") && !disabled(&harness, "Tune"));
}

#[test]
fn an_image_folder_s_channels_and_size_are_edited_by_label() {
    let (_dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "image folder");
    assert_eq!(preset(&harness).dataset.kind, DatasetKind::ImageFolder);
    choose(&mut harness, "channels", "3 (RGB)");
    assert_eq!(preset(&harness).dataset.channels, 3);
    type_into(&mut harness, "image size", "32, 48");
    assert_eq!(preset(&harness).dataset.image_size, [32, 48]);
}

#[test]
fn tar_shards_show_their_pattern_channels_size_and_shuffle_buffer() {
    let (dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "tar shards");
    assert_eq!(preset(&harness).dataset.kind, DatasetKind::Shards);
    let pattern = format!("{}/shard-{{000000..000001}}.tar", dir.path().display());
    type_into(&mut harness, "path", &pattern);
    assert_eq!(
        preset(&harness).dataset.path.as_deref(),
        Some(Path::new(&pattern))
    );
    let first = dir.path().join("shard-000000.tar");
    wait_for_mark(&mut harness, &format!("{} does not exist", first.display()));
    type_into(&mut harness, "path", "http://127.0.0.1:9/shard-{0..3}.tar");
    // The check of a URL pattern answers at once; give it a few frames.
    for _ in 0..50 {
        harness.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !marked(&harness, "does not exist"),
        "a URL is not looked for"
    );
    choose(&mut harness, "channels", "3 (RGB)");
    assert_eq!(preset(&harness).dataset.channels, 3);
    type_into(&mut harness, "image size", "64, 64");
    assert_eq!(preset(&harness).dataset.image_size, [64, 64]);
    type_into_role(&mut harness, Role::SpinButton, "shuffle buffer", "250");
    assert_eq!(preset(&harness).dataset.shuffle_buffer, 250);
}

#[test]
fn a_shard_pattern_over_the_cap_is_marked_and_every_frame_stays_quick() {
    let (dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "tar shards");
    let pattern = format!("{}/s-{{0..99999999}}.tar", dir.path().display());
    let typed = Instant::now();
    type_into(&mut harness, "path", &pattern);
    assert!(
        typed.elapsed() < Duration::from_secs(10),
        "typing took {:?}",
        typed.elapsed()
    );
    wait_for_mark(
        &mut harness,
        "names is 100000000, over the limit of 100000 (raise it with dataset.limits.shards",
    );
}

#[test]
fn an_image_size_without_a_width_is_marked_and_the_last_good_value_stays() {
    let (_dir, mut harness) = setup_panel();
    choose(&mut harness, "kind", "image folder");
    type_into(&mut harness, "image size", "32, 48");
    type_into(&mut harness, "image size", "32");
    assert!(marked(&harness, "give height,width in whole pixels"));
    assert_eq!(preset(&harness).dataset.image_size, [32, 48]);
}

#[test]
fn an_extra_config_is_added_from_the_current_values() {
    let (_dir, mut harness) = setup_panel();
    let before = preset(&harness).extra_configs.len();
    click(&mut harness, "+ add extra config");
    let extras = preset(&harness).extra_configs;
    assert_eq!(extras.len(), before + 1);
    let added = extras.last().unwrap();
    assert_eq!(
        added.num_workers,
        preset(&harness).num_workers.first().copied()
    );
    assert_eq!(
        added.batch_size,
        preset(&harness).batch_size.first().copied()
    );
}

#[test]
fn every_knob_of_the_table_has_its_field_in_the_panel() {
    let dir = tempfile::tempdir().unwrap();
    let harness = harness(dir.path(), None);
    for knob in &KNOBS {
        assert!(
            harness.query_all_by_label(knob.label).next().is_some(),
            "the setup panel has no field labelled `{}` for the knob `{}`",
            knob.label,
            knob.field
        );
    }
}

#[test]
fn knobs_typed_as_text_and_the_run_s_order_and_python_are_edited_by_label() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(dir.path(), None);
    let preset = |harness: &Harness<'_, App>| harness.state().preset().clone();

    type_into(&mut harness, "ranks", "1, 2");
    assert_eq!(preset(&harness).ranks, [1, 2]);
    type_into(&mut harness, "intra-op threads", "auto,4");
    assert_eq!(
        preset(&harness).intra_op_threads,
        [IntraOpThreads::Auto, IntraOpThreads::Count(4)]
    );
    type_into(&mut harness, "intra-op threads", "0");
    assert!(marked(&harness, "`0` is not auto or a count of at least 1"));
    assert_eq!(
        preset(&harness).intra_op_threads.len(),
        2,
        "the last good value stays"
    );
    type_into(&mut harness, "prefetch", "x");
    assert!(marked(&harness, "`x` is not a whole number"));

    choose(&mut harness, "order", "shuffled");
    assert_eq!(preset(&harness).order, RunOrder::Shuffled);
    choose(&mut harness, "in order", "both (sweep)");
    assert_eq!(preset(&harness).in_order, [false, true]);

    type_into(&mut harness, "python executable", "/no/such/python");
    assert_eq!(
        preset(&harness).python.as_deref(),
        Some(Path::new("/no/such/python"))
    );
    assert!(marked(&harness, "/no/such/python does not exist"));
    type_into(&mut harness, "python executable", "");
    assert_eq!(preset(&harness).python, None);
}

#[test]
fn a_custom_pipeline_s_ops_are_reordered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom.ron");
    let (flip, normalize, rotate) = (
        Op::Flip { p: 0.5 },
        Op::Normalize,
        Op::Rotate { degrees: 10.0 },
    );
    Preset {
        name: "custom".to_owned(),
        pipeline: vec![PipelineSpec::Custom {
            name: "mine".to_owned(),
            ops: vec![flip.clone(), normalize.clone(), rotate.clone()],
        }],
        ..Preset::default()
    }
    .save(&path)
    .unwrap();
    let mut harness = harness(dir.path(), Some(path.display().to_string()));
    let ops = |harness: &Harness<'_, App>| match &harness.state().preset().pipeline[0] {
        PipelineSpec::Custom { ops, .. } => ops.clone(),
        other => panic!("{other:?}"),
    };
    // The first op's "down" moves it after the second.
    harness.get_all_by_label("down").next().unwrap().click();
    harness.run_steps(2);
    assert_eq!(
        ops(&harness),
        [normalize.clone(), flip.clone(), rotate.clone()]
    );
    // The last op's "up" moves it before the one above.
    harness.get_all_by_label("up").last().unwrap().click();
    harness.run_steps(2);
    assert_eq!(ops(&harness), [normalize, rotate, flip]);
}

/// Browse on a machine where no file dialog can open (no D-Bus session for the portal, no
/// zenity: a server reached through X forwarding, or Xvfb) says why and points to the
/// path field, instead of doing nothing. The app reads that from its environment, so the
/// test runs itself again in a child process given such an environment.
#[test]
fn browse_where_no_file_dialog_can_open_says_why() {
    let empty = tempfile::tempdir().unwrap();
    let name = "browse_where_no_file_dialog_can_open_says_why";
    let in_child = common::in_own_process(module_path!(), name, |command| {
        command
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("XDG_RUNTIME_DIR", empty.path())
            .env("PATH", empty.path());
    });
    if !in_child {
        return;
    }
    let (_dir, mut harness) = setup_panel();
    harness.get_all_by_label("Browse…").next().unwrap().click();
    step_until(&mut harness, Duration::from_secs(10), |app| {
        !app.messages().is_empty()
    });
    let message = &harness.state().messages()[0];
    assert!(message.error, "{}", message.text);
    assert!(
        message.text.contains("No file dialog can open here")
            && message.text.contains("Type the path into the field"),
        "{}",
        message.text
    );
}
