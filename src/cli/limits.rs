//! The command line's limits, as people write them, each held to the range a preset or
//! the app gives it: `--memory-limit` (a size), `--resolve-for` and `--budget` (times).

use std::time::Duration;

use loaderbench_engine::Error;

/// A `--memory-limit` as people write sizes (`16GiB`, `512 MiB`), within the preset
/// field's range (wherever it is given, `report` included).
pub fn memory_limit(text: &str) -> Result<bytesize::ByteSize, Error> {
    let limit: bytesize::ByteSize = text.parse().map_err(|err| {
        Error::value(format!(
            "--memory-limit {text}: {err} (write a size such as 16GiB or 512MiB)"
        ))
    })?;
    loaderbench_engine::plan::check_number("memory_limit", "limit", limit.as_u64() as f64)
        .map_err(|err| Error::value(format!("--memory-limit {text}: {}", err.problem)))?;
    Ok(limit)
}

/// The longest time limit a command takes (`--resolve-for`, `--budget`): a day, as the
/// preset's `resolve_for_s` and the app's tune budget.
const LONGEST_TIME_LIMIT: Duration = Duration::from_secs(86_400);

/// A time limit as people write one (`90s`, `5m`, `2h`), at most [`LONGEST_TIME_LIMIT`].
pub fn time_limit(text: &str) -> Result<Duration, String> {
    let limit = humantime::parse_duration(text).map_err(|err| err.to_string())?;
    if limit > LONGEST_TIME_LIMIT {
        return Err(format!(
            "over a day: at most {} (see docs/limits.md)",
            humantime::format_duration(LONGEST_TIME_LIMIT)
        ));
    }
    Ok(limit)
}

/// A tune's budget: a [`time_limit`] of at least a second, the least a round takes.
pub fn budget(text: &str) -> Result<Duration, String> {
    let budget = time_limit(text)?;
    if budget < Duration::from_secs(1) {
        return Err("under a second: a tune needs at least one round".to_owned());
    }
    Ok(budget)
}
