//! Text for people, shared by every front end: the results table's model
//! ([`table::ResultsTable`]), where the time goes ([`stages::table`]), a tune's trail
//! ([`tune::table`]), the aligned Markdown rendering of any table, and the number
//! and yes/no formats the tables use. The Markdown exporter, the CLI, the analysis report
//! and the desktop app all build their tables from here, so they read alike; this module
//! depends on results and plans only, never on exporters or the analysis.

pub mod results_table;
pub mod stages;
pub mod tune;

/// Seconds as [`loaderbench_engine::seconds`] writes them (`0.53`, `0.0014`); a dash for
/// no value.
pub fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), loaderbench_engine::seconds)
}

/// Seconds, followed by the interval when there is one: `0.53 [0.49, 0.58]`.
pub fn with_interval(value: Option<f64>, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((low, high)) => format!(
            "{} [{}, {}]",
            seconds(value),
            seconds(Some(low)),
            seconds(Some(high))
        ),
        None => seconds(value),
    }
}

/// A yes/no knob as the classic experiment printed it: `True` or `False`.
pub fn python_bool(value: bool) -> String {
    if value { "True" } else { "False" }.to_owned()
}

/// An aligned Markdown table.
pub fn render(header: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut text = line(header);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    text.push_str(&line(&rule));
    for row in rows {
        text.push_str(&line(row));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_keep_two_decimals_and_never_show_a_false_zero() {
        assert_eq!(seconds(None), "-");
        assert_eq!(seconds(Some(0.001)), "0.0010");
        assert_eq!(seconds(Some(0.00143)), "0.0014");
        assert_eq!(seconds(Some(0.0347)), "0.035");
        assert_eq!(seconds(Some(0.1234)), "0.12");
        assert_eq!(seconds(Some(0.0)), "0.00");
        assert_eq!(
            with_interval(Some(0.534), Some((0.49, 0.58))),
            "0.53 [0.49, 0.58]"
        );
    }

    #[test]
    fn renders_an_aligned_table() {
        let header = ["a".to_owned(), "long name".to_owned()];
        let rows = vec![vec!["1".to_owned(), "2".to_owned()]];
        assert_eq!(
            render(&header, &rows),
            "| a   | long name |\n| --- | --------- |\n| 1   | 2         |\n"
        );
    }
}
