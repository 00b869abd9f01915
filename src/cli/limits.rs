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

/// A time limit as people write one (`90s`, `5m`, `2h`, or a bare number of seconds, as
/// the preset's `resolve_for_s` and the app's budget field take it), at most
/// [`LONGEST_TIME_LIMIT`].
pub fn time_limit(text: &str) -> Result<Duration, String> {
    let too_long = || {
        format!(
            "over a day: at most {} (see docs/limits.md)",
            humantime::format_duration(LONGEST_TIME_LIMIT)
        )
    };
    if let Ok(seconds) = text.trim().parse::<f64>() {
        return match seconds {
            s if s.is_nan() || s < 0.0 => Err("a time is 0 seconds or more".to_owned()),
            s if s > LONGEST_TIME_LIMIT.as_secs_f64() => Err(too_long()),
            s => Ok(Duration::from_secs_f64(s)),
        };
    }
    let limit = humantime::parse_duration(text)
        .map_err(|err| format!("{err} (write a time such as 90s, 5m or 2h, or seconds: 90)"))?;
    if limit > LONGEST_TIME_LIMIT {
        return Err(too_long());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_limit_is_written_with_a_unit_or_as_seconds() {
        assert_eq!(time_limit("90"), Ok(Duration::from_secs(90)));
        assert_eq!(time_limit("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(time_limit("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(time_limit("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(time_limit("86400"), Ok(LONGEST_TIME_LIMIT));
        for over in ["86401", "1e300", "inf", "2days"] {
            assert!(
                time_limit(over).unwrap_err().starts_with("over a day"),
                "{over}"
            );
        }
        for negative in ["-1", "NaN"] {
            assert_eq!(
                time_limit(negative),
                Err("a time is 0 seconds or more".to_owned())
            );
        }
        assert!(time_limit("90x").unwrap_err().contains("or seconds: 90"));
    }
}
