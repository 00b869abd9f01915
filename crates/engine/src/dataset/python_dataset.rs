//! The user's own PyTorch Dataset (`kind: python`) as a preset names it: a module's
//! path, the factory that returns the Dataset, its keyword arguments and an optional
//! collate function. Only the Python runtimes (`pytorch`, `spdl`) load it (user code runs
//! in their script's process tree, never in ours), so this module only checks the fields and
//! describes the dataset; `measure::pytorch` imports and runs it.

use std::path::Path;

use super::DatasetSpec;
use crate::error::{FieldError, FieldPath};
use crate::python_call::{CallField, PythonCall, is_identifier};

/// Why our engine cannot load a python dataset, and what to use instead.
pub const ENGINE_REFUSAL: &str = "a python dataset is the user's own PyTorch Dataset, which \
    only the Python runtimes load (PyTorch's DataLoader, SPDL); use runtime: [pytorch] or \
    [spdl]";

/// The dataset's call: `factory(**args)` from the module at `path` (empty fields where
/// the preset has none, which [`check`] refuses).
pub fn call(spec: &DatasetSpec) -> PythonCall<'_> {
    PythonCall {
        path: spec.path.as_deref().unwrap_or(Path::new("")),
        factory: spec.factory.as_deref().unwrap_or_default(),
        args: &spec.args,
    }
}

/// Checks the fields a python dataset needs (the module's existence is checked when a
/// run starts, like every dataset file).
pub fn check(spec: &DatasetSpec) -> Result<(), FieldError> {
    let bad = |field: FieldPath, problem: String| FieldError::new(None, field, problem);
    if let Some((field, problem)) = call(spec).problem("the Dataset") {
        let field = match field {
            CallField::Path => FieldPath::DATASET_PATH,
            CallField::Factory => FieldPath::DATASET_FACTORY,
            CallField::Args => FieldPath::DATASET_ARGS,
        };
        return Err(bad(field, format!("a python dataset: {problem}")));
    }
    match spec.collate.as_deref().filter(|c| !is_identifier(c)) {
        Some(collate) => Err(bad(
            FieldPath::DATASET_COLLATE,
            format!("`{collate}` is not a Python function name"),
        )),
        None => Ok(()),
    }
}

/// One line for tables: `mnist_user.py: make_dataset(root="/data")`.
pub fn describe(spec: &DatasetSpec) -> String {
    call(spec).describe()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::DatasetKind;

    fn spec() -> DatasetSpec {
        DatasetSpec {
            kind: DatasetKind::Python,
            path: Some("my_data.py".into()),
            factory: Some("make_dataset".to_owned()),
            args: [("root".to_owned(), serde_json::json!("/data"))].into(),
            collate: Some("make_collate".to_owned()),
            ..DatasetSpec::default()
        }
    }

    #[test]
    fn a_complete_spec_passes_and_reads_as_a_call() {
        assert_eq!(check(&spec()), Ok(()));
        assert_eq!(
            describe(&spec()),
            "my_data.py: make_dataset(root=\"/data\")"
        );
    }

    #[test]
    fn each_missing_or_malformed_field_is_named() {
        let field = |edit: fn(&mut DatasetSpec)| {
            let mut spec = spec();
            edit(&mut spec);
            check(&spec).unwrap_err().field
        };
        assert_eq!(field(|s| s.path = None), "dataset.path");
        assert_eq!(field(|s| s.factory = None), "dataset.factory");
        assert_eq!(
            field(|s| s.factory = Some("make dataset".to_owned())),
            "dataset.factory"
        );
        assert_eq!(
            field(|s| s.collate = Some("1collate".to_owned())),
            "dataset.collate"
        );
        assert_eq!(
            field(|s| {
                s.args.insert("no-dash".to_owned(), serde_json::json!(1));
            }),
            "dataset.args"
        );
    }
}
