//! The user's own PyTorch Dataset (`kind: python`) as a preset names it: a module's
//! path, the factory that returns the Dataset, its keyword arguments and an optional
//! collate function. Only the Python runtimes (`pytorch`, `spdl`) load it (user code runs
//! in their script's process tree, never in ours), so this module only checks the fields and
//! describes the dataset; `measure::pytorch` imports and runs it.

use super::DatasetSpec;
use crate::error::FieldError;

/// Why our engine cannot load a python dataset, and what to use instead.
pub const ENGINE_REFUSAL: &str = "a python dataset is the user's own PyTorch Dataset, which \
    only the Python runtimes load (PyTorch's DataLoader, SPDL); use runtime: [pytorch] or \
    [spdl]";

/// Checks the fields a python dataset needs (the module's existence is checked when a
/// run starts, like every dataset file).
pub fn check(spec: &DatasetSpec) -> Result<(), FieldError> {
    let bad = |field: &str, problem: String| FieldError::new(None, field, problem);
    if spec
        .path
        .as_deref()
        .is_none_or(|p| p.as_os_str().is_empty())
    {
        return Err(bad(
            "dataset.path",
            "a python dataset needs the path of its module (a .py file)".to_owned(),
        ));
    }
    let factory = spec.factory.as_deref().unwrap_or_default();
    if !is_identifier(factory) {
        return Err(bad(
            "dataset.factory",
            format!(
                "`{factory}` is not a Python function name; name the function that returns the Dataset"
            ),
        ));
    }
    if let Some(collate) = spec.collate.as_deref().filter(|c| !is_identifier(c)) {
        return Err(bad(
            "dataset.collate",
            format!("`{collate}` is not a Python function name"),
        ));
    }
    if let Some(key) = spec.args.keys().find(|key| !is_identifier(key)) {
        return Err(bad(
            "dataset.args",
            format!("`{key}` is not a Python keyword argument name"),
        ));
    }
    Ok(())
}

/// One line for tables: `mnist_user.py: make_dataset(root="/data")`.
pub fn describe(spec: &DatasetSpec) -> String {
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    format!(
        "{}: {}({})",
        spec.path
            .as_deref()
            .unwrap_or(std::path::Path::new("?"))
            .display(),
        spec.factory.as_deref().unwrap_or("?"),
        args.join(", ")
    )
}

/// A Python identifier in its ASCII form: a letter or `_`, then letters, digits or `_`.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
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
