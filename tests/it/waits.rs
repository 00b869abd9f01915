//! Every wait ends, and nothing a preset names is expanded before it is counted: a brace
//! pattern naming more shards than `dataset.limits.shards` is refused quickly by the CLI
//! as a process under a memory limit, an HTTP shard that trickles is an error naming the
//! shard and its server, and cancel reaches a dataset while it opens.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::Output;
use std::time::Duration;

use common::{assert_error_line, loaderbench_command, run_with_deadline};

/// Address space the CLI may take when it refuses a pattern: enough for libtorch, far
/// below what 10^8 shard names take.
const REFUSAL_ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// `loaderbench run seed-light` with a shard `pattern`, under
/// [`REFUSAL_ADDRESS_SPACE_BYTES`] and a generous time limit.
fn run_with_pattern(pattern: &str) -> Output {
    let path = format!("dataset.path={pattern}");
    let mut command = loaderbench_command(&[
        "run",
        "seed-light",
        "-q",
        "--set",
        "dataset.kind=shards",
        "--set",
        &path,
    ]);
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: REFUSAL_ADDRESS_SPACE_BYTES,
                rlim_max: REFUSAL_ADDRESS_SPACE_BYTES,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run_with_deadline(&mut command, Duration::from_secs(60))
}

#[test]
fn a_brace_pattern_over_the_shard_cap_is_refused_before_it_is_expanded() {
    let dir = tempfile::TempDir::new().unwrap();
    let pattern = format!("{}/s-{{0..99999999}}.tar", dir.path().display());
    assert_error_line(
        &run_with_pattern(&pattern),
        2,
        &[
            &pattern,
            "the number of shards dataset.path names is 100000000, over the limit of 100000",
            "dataset.limits.shards",
        ],
    );
    let pattern = format!("{}/s-{{0..18446744073709551615}}.tar", dir.path().display());
    assert_error_line(
        &run_with_pattern(&pattern),
        2,
        &[
            &pattern,
            "over the limit of 100000",
            "dataset.limits.shards",
        ],
    );
}
