//! A call of the user's own Python function as a preset names it: the module's path,
//! the factory in it, and the factory's keyword arguments. The user's Dataset (`kind:
//! python`) and their training step (`python(path, factory, args)`) are both one; this
//! module checks the three fields and writes the call in one line the same way for
//! both. Only the Python runtimes (`pytorch`, `spdl`) import and call it (user code runs
//! in their script's process tree, never in ours); the module's existence is checked
//! when a run starts, like every file.

use std::collections::BTreeMap;
use std::path::Path;

/// The three fields of a call, borrowed from the preset that names them.
#[derive(Debug, Clone, Copy)]
pub struct PythonCall<'a> {
    pub path: &'a Path,
    pub factory: &'a str,
    pub args: &'a BTreeMap<String, serde_json::Value>,
}

/// Which of a call's fields is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallField {
    Path,
    Factory,
    Args,
}

impl PythonCall<'_> {
    /// The first field that cannot be used and why, or `None`; `returns` says what the
    /// factory returns ("the Dataset", "the step").
    pub fn problem(&self, returns: &str) -> Option<(CallField, String)> {
        if self.path.as_os_str().is_empty() {
            return Some((
                CallField::Path,
                "give the path of its module (a .py file)".to_owned(),
            ));
        }
        if !is_identifier(self.factory) {
            return Some((
                CallField::Factory,
                format!(
                    "`{}` is not a Python function name; name the function that returns {returns}",
                    self.factory
                ),
            ));
        }
        let key = self.args.keys().find(|key| !is_identifier(key))?;
        Some((
            CallField::Args,
            format!("`{key}` is not a Python keyword argument name"),
        ))
    }

    /// The call in one line: `my_data.py: make_dataset(root="/data")`.
    pub fn describe(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        format!(
            "{}: {}({})",
            self.path.display(),
            self.factory,
            args.join(", ")
        )
    }
}

/// A Python identifier in its ASCII form: a letter or `_`, then letters, digits or `_`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_is_checked_in_order_and_the_call_reads_as_python() {
        let args = [("root".to_owned(), serde_json::json!("/data"))].into();
        let call = PythonCall {
            path: Path::new("my_data.py"),
            factory: "make_dataset",
            args: &args,
        };
        assert_eq!(call.problem("the Dataset"), None);
        assert_eq!(call.describe(), "my_data.py: make_dataset(root=\"/data\")");
        let field = |call: PythonCall| call.problem("the Dataset").map(|(field, _)| field);
        let path = PythonCall {
            path: Path::new(""),
            factory: "1",
            ..call
        };
        assert_eq!(field(path), Some(CallField::Path));
        let factory = PythonCall {
            factory: "make data",
            ..call
        };
        assert_eq!(field(factory), Some(CallField::Factory));
        let bad_args = [("no-dash".to_owned(), serde_json::json!(1))].into();
        let args = PythonCall {
            args: &bad_args,
            ..call
        };
        assert_eq!(field(args), Some(CallField::Args));
    }

    #[test]
    fn identifiers_are_python_s_ascii_ones() {
        assert!(is_identifier("_make2"));
        assert!(!is_identifier("2make"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("make-data"));
    }
}
