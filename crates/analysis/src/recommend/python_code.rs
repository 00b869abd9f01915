//! Python written into the snippets a recommendation hands over, whichever loader they
//! build: the user's dataset made as the run made it, and Python's literals for JSON
//! values and booleans.

use std::path::Path;

use loaderbench_engine::dataset::DatasetSpec;

/// How the user's dataset was built: its module imported from its folder, the factory
/// called with the preset's arguments, the first `samples` kept, and the collate_fn made.
pub(super) fn user_dataset_lines(spec: &DatasetSpec, samples: Option<usize>) -> String {
    let path = spec.path.clone().unwrap_or_default();
    let folder = path.parent().unwrap_or(Path::new("."));
    let module = path.file_stem().unwrap_or_default().to_string_lossy();
    let factory = spec.factory.as_deref().unwrap_or("make_dataset");
    let mut names = vec![factory];
    names.extend(spec.collate.as_deref());
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|(name, value)| format!("{name}={}", python_literal(value)))
        .collect();
    let mut code = format!(
        "import sys\n\
         sys.path.insert(0, {})\n\
         from {module} import {}\n\
         dataset = {factory}({})\n",
        python_literal(&serde_json::Value::from(folder.display().to_string())),
        names.join(", "),
        args.join(", ")
    );
    if let Some(samples) = samples {
        code.push_str(&format!(
            "from torch.utils.data import Subset\n\
             # loaderbench measured the first {samples} samples; leave this out to train on all\n\
             dataset = Subset(dataset, range(min({samples}, len(dataset))))\n"
        ));
    }
    if let Some(collate) = &spec.collate {
        code.push_str(&format!("collate_fn = {collate}()\n"));
    }
    code
}

pub(super) fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// A JSON value as a Python literal: JSON's strings, numbers, lists and objects read the
/// same in Python; its `true`, `false` and `null` are spelled `True`, `False`, `None`.
fn python_literal(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(b) => python_bool(*b).to_owned(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        python_literal(&Value::from(k.as_str())),
                        python_literal(v)
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::String(_) | Value::Number(_) => value.to_string(),
    }
}
