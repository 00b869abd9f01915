//! Presentation, above the analysis: the results table and stage tables drawn alike by
//! the CLI, the Markdown export and the app ([`tables`]); the exporters (JSON, CSV,
//! Markdown); saved runs read back as documents and several runs overlaid as one; ours
//! against PyTorch's side by side; the analysis as text; and the names of the views the
//! app can save as PNG. Plain data in, text or bytes out: no drawing toolkit.

pub mod analysis_text;
pub mod compare;
pub mod documents;
pub mod export;
pub mod overlay;
pub mod tables;
pub mod views;
