//! The setup panel through egui_kittest: every knob of the knob table has its field,
//! those typed as text mark a bad value, and every preset field beyond the sweep knobs is
//! edited by its label and changes the preset (name, description, shuffle, seed,
//! drop_last, normalize, worker timeout, training step, planned epochs, the labels file,
//! image-folder channels and size), a value that does not parse is marked beside its
//! field and leaves the last good value, an extra config is added from the current
//! values, and a custom pipeline's ops are reordered.
#![cfg(feature = "gui")]

use std::path::Path;

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use loaderbench::dataset::DatasetKind;
use loaderbench::gui::{App, Launch};
use loaderbench::plan::KNOBS;
use loaderbench::preset::{IntraOpThreads, Preset, RunOrder};
use loaderbench::step::StepCost;
use loaderbench::transform::{Op, PipelineSpec};

fn harness(dir: &Path, preset: Option<String>) -> Harness<'static, App> {
    let launch = Launch {
        preset,
        run_now: false,
        journal_dir: Some(dir.to_path_buf()),
        ..Launch::default()
    };
    Harness::builder()
        .with_size([1280.0, 2000.0])
        .build_eframe(move |cc| App::new(cc, launch))
}

/// Replaces the text of the field of `role` labelled `label`.
fn type_into_role(harness: &mut Harness<'_, App>, role: Role, label: &str, text: &str) {
    harness.get_by_role_and_label(role, label).focus();
    harness.run_steps(2);
    harness.key_press_modifiers(Modifiers::COMMAND, Key::A);
    if text.is_empty() {
        harness.key_press(Key::Backspace);
    } else {
        harness.get_by_role_and_label(role, label).type_text(text);
    }
    harness.run_steps(2);
}

fn type_into(harness: &mut Harness<'_, App>, label: &str, text: &str) {
    type_into_role(harness, Role::TextInput, label, text);
}

/// Picks `choice` in the menu labelled `label`.
fn choose(harness: &mut Harness<'_, App>, label: &str, choice: &str) {
    harness.get_by_role_and_label(Role::ComboBox, label).click();
    harness.run_steps(2);
    harness.get_by_label(choice).click();
    harness.run_steps(2);
}

fn marked(harness: &Harness<'_, App>, problem: &str) -> bool {
    harness.query_by_label_contains(problem).is_some()
}

#[test]
fn every_preset_field_is_edited_by_label_and_bad_values_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = harness(dir.path(), None);
    let preset = |harness: &Harness<'_, App>| harness.state().preset().clone();

    type_into(&mut harness, "name", "mine");
    assert_eq!(preset(&harness).name, "mine");
    type_into(&mut harness, "name", "");
    assert!(marked(&harness, "give the preset a name"));
    type_into(&mut harness, "name", "mine");
    type_into_role(
        &mut harness,
        Role::MultilineTextInput,
        "description",
        "two\nlines",
    );
    assert_eq!(preset(&harness).description, "two\nlines");

    let shuffle = preset(&harness).shuffle;
    harness
        .get_by_role_and_label(Role::CheckBox, "shuffle")
        .click();
    harness.run_steps(2);
    assert_eq!(preset(&harness).shuffle, !shuffle);
    let drop_last = preset(&harness).drop_last;
    harness
        .get_by_role_and_label(Role::CheckBox, "drop last")
        .click();
    harness.run_steps(2);
    assert_eq!(preset(&harness).drop_last, !drop_last);

    type_into(&mut harness, "seed", "42");
    assert_eq!(preset(&harness).seed, 42);
    type_into(&mut harness, "seed", "x");
    assert!(marked(&harness, "`x` is not a whole number"));
    assert_eq!(preset(&harness).seed, 42, "the last good value stays");
    type_into(&mut harness, "seed", "7");
    assert!(!marked(&harness, "`x` is not a whole number"));

    type_into(&mut harness, "normalize mean", "0.5, 0.25, 0.125");
    assert_eq!(preset(&harness).normalize.mean, [0.5, 0.25, 0.125]);
    type_into(&mut harness, "normalize std", "0.2,0");
    assert!(marked(&harness, "a standard deviation must be above zero"));
    type_into(&mut harness, "normalize std", "0.2,0.3,0.4");
    assert_eq!(preset(&harness).normalize.std, [0.2, 0.3, 0.4]);

    type_into(&mut harness, "worker timeout (s)", "-1");
    assert!(marked(&harness, "not a number of seconds above zero"));
    type_into(&mut harness, "worker timeout (s)", "30");
    assert_eq!(preset(&harness).worker_timeout_s, 30.0);

    choose(&mut harness, "training step", "fixed");
    assert_eq!(preset(&harness).step, StepCost::Fixed(5.0));
    type_into(&mut harness, "step ms per batch", "12.5");
    assert_eq!(preset(&harness).step, StepCost::Fixed(12.5));
    type_into(&mut harness, "step ms per batch", "-3");
    assert!(marked(&harness, "milliseconds must be zero or more"));
    choose(&mut harness, "training step", "mlp");
    type_into(&mut harness, "step hidden units", "64");
    assert_eq!(preset(&harness).step, StepCost::Mlp { hidden: 64 });

    type_into_role(&mut harness, Role::SpinButton, "planned epochs", "90");
    harness.key_press(Key::Enter);
    harness.run_steps(2);
    assert_eq!(preset(&harness).planned_epochs, 90);

    choose(&mut harness, "kind", "idx");
    type_into(&mut harness, "labels file", "/no/such/labels");
    assert_eq!(
        preset(&harness).dataset.labels.as_deref(),
        Some(Path::new("/no/such/labels"))
    );
    assert!(marked(&harness, "/no/such/labels does not exist"));

    choose(&mut harness, "kind", "image folder");
    assert_eq!(preset(&harness).dataset.kind, DatasetKind::ImageFolder);
    choose(&mut harness, "channels", "3 (RGB)");
    assert_eq!(preset(&harness).dataset.channels, 3);
    type_into(&mut harness, "image size", "32, 48");
    assert_eq!(preset(&harness).dataset.image_size, [32, 48]);
    type_into(&mut harness, "image size", "32");
    assert!(marked(&harness, "give height,width in whole pixels"));
    assert_eq!(preset(&harness).dataset.image_size, [32, 48]);

    let before = preset(&harness).extra_configs.len();
    harness.get_by_label("+ add extra config").click();
    harness.run_steps(2);
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
    Preset {
        name: "custom".to_owned(),
        pipeline: vec![PipelineSpec::Custom {
            name: "mine".to_owned(),
            ops: vec![
                Op::Flip { p: 0.5 },
                Op::Normalize,
                Op::Rotate { degrees: 10.0 },
            ],
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
        [
            Op::Normalize,
            Op::Flip { p: 0.5 },
            Op::Rotate { degrees: 10.0 }
        ]
    );
    // The last op's "up" moves it before the one above.
    harness.get_all_by_label("up").last().unwrap().click();
    harness.run_steps(2);
    assert_eq!(
        ops(&harness),
        [
            Op::Normalize,
            Op::Rotate { degrees: 10.0 },
            Op::Flip { p: 0.5 }
        ]
    );
}
