//! The caps on what a dataset's files may make us allocate or wait for, checked before
//! memory is taken: how many shards a path pattern may name, how many pixels an image's
//! header may claim, how many bytes one file or tar member is held in memory, and how
//! many bytes a compressed IDX file may decompress to; and how long an HTTP shard may
//! stall (give too few bytes) before it is an error. Each has a default that no real
//! dataset we know of reaches; a preset raises one as `dataset.limits.<field>` (or
//! `--set dataset.limits.<field>=N`), and an input over a cap is an error that names the
//! file, the cap and that field. `docs/limits.md` lists them.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The caps of one dataset, as its preset gives them (defaults otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatasetLimits {
    /// Shards a `shards` path pattern may expand to.
    pub shards: u64,
    /// Pixels (width × height) an image's header may claim; PIL's own default cap.
    pub image_pixels: u64,
    /// Bytes of one image file or tar member, which is held whole in memory to decode.
    pub file_bytes: u64,
    /// Bytes a gzip-compressed IDX file may decompress to (it is held in memory).
    pub idx_bytes: u64,
    /// Seconds of waiting in which an HTTP shard must give 64 KiB, or it stalled and is
    /// an error naming it and its server; 0: no such check.
    pub http_stall_s: u64,
}

impl DatasetLimits {
    pub const DEFAULT: DatasetLimits = DatasetLimits {
        shards: 100_000,
        image_pixels: 89_478_485,
        file_bytes: 256 << 20,
        idx_bytes: 16 << 30,
        http_stall_s: 30,
    };

    /// True when every cap is its default (a preset then leaves `limits` out).
    pub fn is_default(&self) -> bool {
        *self == DatasetLimits::DEFAULT
    }

    /// The error for `what` of `file` over the cap `field` (`value` > `limit`): names the
    /// file, the amount, the cap and the preset field that raises it.
    pub fn exceeded(
        file: impl AsRef<std::path::Path>,
        what: &str,
        value: u64,
        field: &str,
        limit: u64,
    ) -> Error {
        Error::file(file, DatasetLimits::problem(what, value, field, limit))
    }

    /// What [`DatasetLimits::exceeded`] says after the file's name, for a caller that
    /// names the file itself (an archive's member, a header checked before its file is
    /// known).
    pub fn problem(what: &str, value: u64, field: &str, limit: u64) -> String {
        format!(
            "{what} is {value}, over the limit of {limit} \
             (raise it with dataset.limits.{field}; see docs/limits.md)"
        )
    }

    /// Checks `value` against cap `field` for `what` of `file`.
    pub fn check(
        file: impl AsRef<std::path::Path>,
        what: &str,
        value: u64,
        field: &str,
        limit: u64,
    ) -> Result<()> {
        if value > limit {
            return Err(DatasetLimits::exceeded(file, what, value, field, limit));
        }
        Ok(())
    }

    /// [`DatasetLimits::check`] whose error is the [`DatasetLimits::problem`] alone.
    pub fn check_problem(
        what: &str,
        value: u64,
        field: &str,
        limit: u64,
    ) -> std::result::Result<(), String> {
        if value > limit {
            return Err(DatasetLimits::problem(what, value, field, limit));
        }
        Ok(())
    }
}

impl Default for DatasetLimits {
    fn default() -> Self {
        DatasetLimits::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_over_a_cap_names_the_file_the_cap_and_the_field_that_raises_it() {
        let err = DatasetLimits::check(
            "big.jpg",
            "the image's pixels",
            268_435_456,
            "image_pixels",
            89_478_485,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "big.jpg: the image's pixels is 268435456, over the limit of 89478485 \
             (raise it with dataset.limits.image_pixels; see docs/limits.md)"
        );
        assert!(err.is_bad_input());
        assert!(DatasetLimits::check("ok.jpg", "pixels", 10, "image_pixels", 10).is_ok());
    }

    #[test]
    fn a_preset_raises_one_cap_and_keeps_the_others() {
        let limits: DatasetLimits = ron::from_str("(shards: 200000)").unwrap();
        assert_eq!(limits.shards, 200_000);
        assert_eq!(limits.image_pixels, DatasetLimits::DEFAULT.image_pixels);
        assert!(ron::from_str::<DatasetLimits>("(shard: 1)").is_err());
    }
}
