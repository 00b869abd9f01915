//! Pairs a preset writes either way: RON hands a `[a, b]` list and an `(a, b)` tuple to a
//! self-describing reader alike, where `[T; 2]`'s own reader takes the tuple only, and
//! the error it gave for a list (`Expected opening (`) said nothing of what to write. The
//! dataset's `image_size` and the crop and resize ops' `size` read both as
//! [`height_width`], the blur's `sigma` as [`min_max`]; they are written as tuples.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, SeqAccess, Visitor};

/// Reads `[height, width]` (or `(height, width)`) in pixels.
pub(crate) fn height_width<'de, D: Deserializer<'de>>(d: D) -> Result<[usize; 2], D::Error> {
    either_bracket(d, "[height, width] in pixels, as [224, 224] or (224, 224)")
}

/// Reads `[min, max]` (or `(min, max)`).
pub(crate) fn min_max<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    either_bracket(d, "[min, max], as [0.1, 2.0] or (0.1, 2.0)")
}

/// Reads a pair from `[a, b]` or `(a, b)`; an error says it `expected` what is given.
fn either_bracket<'de, D, T>(deserializer: D, expected: &'static str) -> Result<[T; 2], D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Pair<T>(&'static str, PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Pair<T> {
        type Value = [T; 2];

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut values: A) -> Result<Self::Value, A::Error> {
            let first = values
                .next_element()?
                .ok_or_else(|| A::Error::invalid_length(0, &self))?;
            let second = values
                .next_element()?
                .ok_or_else(|| A::Error::invalid_length(1, &self))?;
            match values.next_element::<IgnoredAny>()? {
                None => Ok([first, second]),
                Some(_) => Err(A::Error::invalid_length(3, &self)),
            }
        }
    }

    deserializer.deserialize_any(Pair(expected, PhantomData))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Sized {
        #[serde(deserialize_with = "super::height_width")]
        size: [usize; 2],
        #[serde(deserialize_with = "super::min_max")]
        sigma: [f64; 2],
    }

    #[test]
    fn a_pair_reads_from_a_list_or_a_tuple_and_two_values_only() {
        let read = |text: &str| ron::from_str::<Sized>(text);
        let expected = Sized {
            size: [3, 4],
            sigma: [0.1, 2.0],
        };
        assert_eq!(read("(size: [3, 4], sigma: (0.1, 2.0))").unwrap(), expected);
        assert_eq!(read("(size: (3, 4), sigma: [0.1, 2.0])").unwrap(), expected);
        for bad in [
            "(size: [3], sigma: [0.1, 2.0])",
            "(size: [3, 4, 5], sigma: [0.1, 2.0])",
        ] {
            let err = read(bad).unwrap_err().to_string();
            assert!(err.contains("[height, width] in pixels"), "{bad}: {err}");
        }
        let err = read("(size: [3, 4], sigma: 0.5)").unwrap_err().to_string();
        assert!(err.contains("[min, max], as [0.1, 2.0]"), "{err}");
    }
}
