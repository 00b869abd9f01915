//! The presets that ship inside the binary (the files under `presets/`), so that
//! `loaderbench run seed-light` works from any directory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::preset::Preset;

/// Name and RON text of every built-in preset.
pub const PRESETS: [(&str, &str); 10] = [
    (
        "seed-light",
        include_str!("../../../presets/seed-light.ron"),
    ),
    (
        "seed-heavy",
        include_str!("../../../presets/seed-heavy.ron"),
    ),
    (
        "seed-light-spawn",
        include_str!("../../../presets/seed-light-spawn.ron"),
    ),
    (
        "seed-heavy-spawn",
        include_str!("../../../presets/seed-heavy-spawn.ron"),
    ),
    (
        "seed-light-pytorch",
        include_str!("../../../presets/seed-light-pytorch.ron"),
    ),
    (
        "seed-heavy-pytorch",
        include_str!("../../../presets/seed-heavy-pytorch.ron"),
    ),
    (
        "seed-light-sample",
        include_str!("../../../presets/seed-light-sample.ron"),
    ),
    (
        "seed-heavy-sample",
        include_str!("../../../presets/seed-heavy-sample.ron"),
    ),
    ("aa-check", include_str!("../../../presets/aa-check.ron")),
    ("ddp-light", include_str!("../../../presets/ddp-light.ron")),
];

/// Loads `name_or_path`: a file if one exists there, else a built-in preset by name.
/// Returns the preset and the path errors should name.
pub fn load(name_or_path: &str) -> Result<(Preset, PathBuf)> {
    let path = Path::new(name_or_path);
    if path.exists() {
        return Ok((Preset::load(path)?, path.to_path_buf()));
    }
    let builtin = PRESETS
        .iter()
        .find(|(name, _)| *name == name_or_path.trim_end_matches(".ron"));
    match builtin {
        Some((name, text)) if !name_or_path.contains(['/', '\\']) => {
            let origin = PathBuf::from(format!("presets/{name}.ron"));
            Ok((Preset::from_ron(text, &origin)?, origin))
        }
        _ => Err(Error::file(
            path,
            format!(
                "no such file, and no built-in preset of that name (built-in: {})",
                names().join(", ")
            ),
        )),
    }
}

/// The built-in presets' names.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::assert_mentions;
    use crate::plan::Plan;

    #[test]
    fn every_builtin_preset_parses_and_plans() {
        for (name, text) in PRESETS {
            let origin = PathBuf::from(name);
            let preset = Preset::from_ron(text, &origin).unwrap();
            assert_eq!(preset.name, name);
            Plan::from_preset(&preset, Some(&origin)).unwrap();
        }
    }

    #[test]
    fn unknown_name_lists_the_builtins() {
        let err = load("no-such-preset").unwrap_err().to_string();
        assert_mentions(&err, &["no-such-preset", "seed-light"]);
    }
}
