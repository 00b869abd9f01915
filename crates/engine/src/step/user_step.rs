//! The user's own training step in Python (`python(path, factory, args)`) as a preset
//! names it: a module's path, the factory that returns the step, and its keyword
//! arguments. Only the Python runtimes (`pytorch`, `spdl`) run it (user code runs in
//! their script's process, never in ours), so this module only checks the fields and
//! describes the step; `measure::pytorch` imports and runs it.

use super::StepSpec;
use crate::python_call::PythonCall;

/// Why our engine cannot run a python step, and what to use instead.
pub const ENGINE_REFUSAL: &str = "a python step is the user's own Python code, which only the \
    Python runtimes run; use runtime: [pytorch] or [spdl] (or a model step, a TorchScript \
    file, which every runtime trains)";

/// The step's call, for a python step.
fn call(step: &StepSpec) -> Option<PythonCall<'_>> {
    let StepSpec::Python {
        path,
        factory,
        args,
    } = step
    else {
        return None;
    };
    Some(PythonCall {
        path,
        factory,
        args,
    })
}

/// Why a python step cannot be used, or `None` when it can (the module's existence is
/// checked when a run starts, like every file).
pub fn problem(step: &StepSpec) -> Option<String> {
    let (_, problem) = call(step)?.problem("the step")?;
    Some(format!("python: {problem}"))
}

/// One line for tables: `python my_step.py: make_step(lr="0.05")`.
pub fn describe(step: &StepSpec) -> String {
    call(step).map_or_else(
        || step.describe(),
        |call| format!("python {}", call.describe()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> StepSpec {
        StepSpec::Python {
            path: "my_step.py".into(),
            factory: "make_step".to_owned(),
            args: [("lr".to_owned(), serde_json::json!("0.05"))].into(),
        }
    }

    #[test]
    fn a_complete_step_passes_and_reads_as_a_call() {
        assert_eq!(problem(&step()), None);
        assert_eq!(
            describe(&step()),
            "python my_step.py: make_step(lr=\"0.05\")"
        );
    }

    #[test]
    fn each_missing_or_malformed_field_is_named() {
        let with = |edit: fn(&mut StepSpec)| {
            let mut step = step();
            edit(&mut step);
            problem(&step).unwrap()
        };
        assert!(
            with(|s| if let StepSpec::Python { path, .. } = s {
                *path = "".into()
            })
            .contains("path of its module")
        );
        assert!(
            with(|s| if let StepSpec::Python { factory, .. } = s {
                *factory = "make step".into()
            })
            .contains("`make step` is not a Python function name")
        );
        assert!(
            with(|s| if let StepSpec::Python { args, .. } = s {
                args.insert("no-dash".into(), serde_json::json!(1));
            })
            .contains("`no-dash` is not a Python keyword")
        );
    }
}
