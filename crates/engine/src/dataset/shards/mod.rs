//! Tar shards in WebDataset's layout: where they are ([`pattern`]).

pub mod pattern;
