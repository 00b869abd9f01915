//! The .npy preamble and header: the `\x93NUMPY` magic, the version, and the Python dict
//! literal giving `descr`, `fortran_order` and `shape`
//! (<https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>). Parsing is
//! pure and checks that the data the header promises is all there, so the reader can
//! slice the mapped file by the result without checking again.

use crate::dataset::files::MAX_DATA_BYTES;

const MAGIC: &[u8] = b"\x93NUMPY";

/// What an element's bits mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Unsigned,
    Signed,
    Float,
}

/// A real-number element type as numpy's `descr` gives it: `bool`, `(u)int8` to
/// `(u)int64` or `float16` to `float64`, either byte order. Complex, string, object,
/// date and structured types are refused with a way to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtype {
    pub kind: Kind,
    /// Bytes per element.
    pub size: usize,
    pub big_endian: bool,
}

impl Dtype {
    pub const U8: Dtype = Dtype {
        kind: Kind::Unsigned,
        size: 1,
        big_endian: false,
    };
    pub const F32: Dtype = Dtype {
        kind: Kind::Float,
        size: 4,
        big_endian: false,
    };

    fn parse(descr: &str) -> Result<Self, String> {
        let unsupported = || {
            format!(
                "unsupported dtype '{descr}': convert with \
                 np.ascontiguousarray(a).astype(np.float32) (or np.uint8) and save again"
            )
        };
        let mut chars = descr.chars();
        let big_endian = match chars.next() {
            Some('<' | '|') => false,
            Some('>') => true,
            Some('=') => cfg!(target_endian = "big"),
            _ => return Err(unsupported()),
        };
        let kind = match chars.next() {
            Some('b') => Kind::Bool,
            Some('u') => Kind::Unsigned,
            Some('i') => Kind::Signed,
            Some('f') => Kind::Float,
            _ => return Err(unsupported()),
        };
        let size = chars.as_str().parse().map_err(|_| unsupported())?;
        let fits = match kind {
            Kind::Bool => size == 1,
            Kind::Unsigned | Kind::Signed => matches!(size, 1 | 2 | 4 | 8),
            Kind::Float => matches!(size, 2 | 4 | 8),
        };
        if !fits {
            return Err(unsupported());
        }
        // One byte has no order: '>u1' reads like '|u1'.
        let big_endian = big_endian && size > 1;
        Ok(Dtype {
            kind,
            size,
            big_endian,
        })
    }

    /// The numpy name, for messages: `uint8`, `float16`, `>int32` for big-endian.
    pub fn name(self) -> String {
        let order = if self.big_endian { ">" } else { "" };
        let bits = self.size * 8;
        match self.kind {
            Kind::Bool => "bool".to_string(),
            Kind::Unsigned => format!("{order}uint{bits}"),
            Kind::Signed => format!("{order}int{bits}"),
            Kind::Float => format!("{order}float{bits}"),
        }
    }

    /// The element in `bytes` (exactly `size` of them) as an integer, if it is one;
    /// floats are not labels.
    pub fn integer(self, bytes: &[u8]) -> Option<i64> {
        let raw = self.raw(bytes);
        match self.kind {
            Kind::Bool | Kind::Unsigned => i64::try_from(raw).ok(),
            // Sign-extend from `size` bytes.
            Kind::Signed => Some(self.signed(raw)),
            Kind::Float => None,
        }
    }

    /// The element in `bytes` (exactly `size` of them) as an f32: exact for bools,
    /// floats up to 32 bits and integers up to 2^24, rounded beyond.
    pub fn float(self, bytes: &[u8]) -> f32 {
        let raw = self.raw(bytes);
        match (self.kind, self.size) {
            (Kind::Float, 2) => half::f16::from_bits(raw as u16).to_f32(),
            (Kind::Float, 4) => f32::from_bits(raw as u32),
            (Kind::Float, _) => f64::from_bits(raw) as f32,
            (Kind::Signed, _) => self.signed(raw) as f32,
            (Kind::Bool | Kind::Unsigned, _) => raw as f32,
        }
    }

    /// `raw` sign-extended from `size` bytes.
    fn signed(self, raw: u64) -> i64 {
        let shift = 64 - 8 * self.size as u32;
        ((raw << shift) as i64) >> shift
    }

    /// The element's bits, zero-extended, in the machine's order.
    fn raw(self, bytes: &[u8]) -> u64 {
        let fold = |acc: u64, &byte: &u8| (acc << 8) | u64::from(byte);
        if self.big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        }
    }
}

/// A checked .npy header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    /// The first index varies fastest in the data (column-major), as Fortran and
    /// MATLAB store arrays and as `np.asfortranarray` or a transpose saves them.
    pub fortran_order: bool,
    /// Offset of the first data byte.
    pub data_offset: usize,
}

/// Parses the header of the .npy file in `bytes` and checks that its data follows. The
/// error is the problem in words, for the caller to prefix with the file's name.
pub fn parse(bytes: &[u8]) -> Result<NpyHeader, String> {
    if !bytes.starts_with(MAGIC) {
        return Err("not a .npy file: bad magic (expected \\x93NUMPY)".to_string());
    }
    let (dict_start, dict_len) = dict_span(bytes)?;
    let text = dict_start
        .checked_add(dict_len)
        .and_then(|dict_end| bytes.get(dict_start..dict_end))
        .ok_or("malformed header: the file ends inside it")?;
    let text = std::str::from_utf8(text).map_err(|_| "malformed header: not text")?;
    let fields = Fields::parse(text).map_err(|problem| format!("malformed header: {problem}"))?;
    let header = NpyHeader {
        dtype: Dtype::parse(&fields.descr)?,
        shape: fields.shape,
        fortran_order: fields.fortran_order,
        data_offset: dict_start + dict_len,
    };
    check_data_len(&header, bytes.len())?;
    Ok(header)
}

/// Where the header dict lies: version 1 stores its length in 2 bytes, 2 and 3 in 4.
fn dict_span(bytes: &[u8]) -> Result<(usize, usize), String> {
    let short = || "malformed header: the file ends inside it".to_string();
    let version = *bytes.get(MAGIC.len()).ok_or_else(short)?;
    let len_bytes = match version {
        1 => 2,
        2 | 3 => 4,
        _ => return Err(format!("unsupported .npy version {version}")),
    };
    let len_at = MAGIC.len() + 2;
    let len = bytes.get(len_at..len_at + len_bytes).ok_or_else(short)?;
    let len = len
        .iter()
        .rev()
        .fold(0usize, |acc, &byte| (acc << 8) | usize::from(byte));
    Ok((len_at + len_bytes, len))
}

fn check_data_len(header: &NpyHeader, file_len: usize) -> Result<(), String> {
    let expected = header
        .shape
        .iter()
        .try_fold(header.dtype.size, |acc, &dim| acc.checked_mul(dim))
        .filter(|&bytes| bytes as u64 <= MAX_DATA_BYTES)
        .ok_or_else(|| {
            format!(
                "absurd shape {}: more than {MAX_DATA_BYTES} bytes",
                python_shape(&header.shape)
            )
        })?;
    let found = file_len - header.data_offset;
    if found < expected {
        return Err(format!(
            "truncated: the header promises {expected} bytes of data, found {found}"
        ));
    }
    Ok(())
}

/// A shape as numpy prints it: `(3,)`, `(2, 28, 28)`.
pub fn python_shape(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// The three keys a .npy header dict must have.
struct Fields {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A value in the header dict.
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

impl Fields {
    fn parse(text: &str) -> Result<Self, String> {
        let mut cursor = Cursor { text, at: 0 };
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        for (key, value) in cursor.dict()? {
            match (key.as_str(), value) {
                ("descr", Value::Str(text)) => descr = Some(text),
                ("fortran_order", Value::Bool(flag)) => fortran_order = Some(flag),
                ("shape", Value::Tuple(dims)) => shape = Some(dims),
                (key, _) => return Err(format!("unexpected key or value for '{key}'")),
            }
        }
        Ok(Fields {
            descr: descr.ok_or("no 'descr'")?,
            fortran_order: fortran_order.ok_or("no 'fortran_order'")?,
            shape: shape.ok_or("no 'shape'")?,
        })
    }
}

/// Reads the Python literal subset numpy writes: a dict of strings, booleans and tuples
/// of integers.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// Consumes `token` (after spaces) if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        let found = self.rest().starts_with(token);
        if found {
            self.at += token.len();
        }
        found
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(format!("expected '{token}' at byte {}", self.at))
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Value)>, String> {
        self.expect("{")?;
        let mut entries = Vec::new();
        while !self.eat("}") {
            let key = self.string()?;
            self.expect(":")?;
            entries.push((key, self.value()?));
            if !self.eat(",") {
                self.expect("}")?;
                break;
            }
        }
        Ok(entries)
    }

    fn value(&mut self) -> Result<Value, String> {
        if self.eat("True") {
            Ok(Value::Bool(true))
        } else if self.eat("False") {
            Ok(Value::Bool(false))
        } else if self.eat("(") {
            self.tuple().map(Value::Tuple)
        } else {
            self.string().map(Value::Str)
        }
    }

    /// The rest of a tuple of integers whose `(` was eaten.
    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        let mut dims = Vec::new();
        while !self.eat(")") {
            dims.push(self.integer()?);
            if !self.eat(",") {
                self.expect(")")?;
                break;
            }
        }
        Ok(dims)
    }

    fn integer(&mut self) -> Result<usize, String> {
        self.skip_space();
        let rest = self.rest();
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let number = rest[..digits]
            .parse()
            .map_err(|_| format!("expected a size at byte {}", self.at))?;
        self.at += digits;
        Ok(number)
    }

    fn string(&mut self) -> Result<String, String> {
        self.skip_space();
        let quote = match self.rest().chars().next() {
            Some(quote @ ('\'' | '"')) => quote,
            _ => return Err(format!("expected a string at byte {}", self.at)),
        };
        let body = &self.rest()[1..];
        let end = body
            .find(quote)
            .ok_or_else(|| format!("unterminated string at byte {}", self.at))?;
        let text = body[..end].to_string();
        self.at += end + 2;
        Ok(text)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::error::assert_mentions;

    /// A version-1 .npy file as numpy writes it: dict padded so the data is 64-aligned.
    pub fn npy_bytes(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
            python_shape(shape)
        );
        npy_with_dict(&dict, data)
    }

    pub fn npy_with_dict(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut dict = dict.to_string();
        while !(MAGIC.len() + 4 + dict.len() + 1).is_multiple_of(64) {
            dict.push(' ');
        }
        dict.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend([1, 0]);
        bytes.extend((dict.len() as u16).to_le_bytes());
        bytes.extend(dict.as_bytes());
        bytes.extend(data);
        bytes
    }

    #[test]
    fn parses_what_numpy_writes() {
        let bytes = npy_bytes("<f4", &[2, 3], &[0; 24]);
        let header = parse(&bytes).unwrap();
        assert_eq!(header.dtype, Dtype::F32);
        assert_eq!(header.shape, vec![2, 3]);
        assert_eq!(header.data_offset, bytes.len() - 24);
        assert_eq!(header.data_offset % 64, 0);
    }

    #[test]
    fn parses_version_2_and_one_element_tuples() {
        let dict = "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"|u1\"}";
        let mut bytes = MAGIC.to_vec();
        bytes.extend([2, 0]);
        bytes.extend((dict.len() as u32).to_le_bytes());
        bytes.extend(dict.as_bytes());
        bytes.extend([1, 2, 3]);
        let header = parse(&bytes).unwrap();
        assert_eq!((header.dtype, header.shape), (Dtype::U8, vec![3]));
        assert_eq!(header.data_offset, 12 + dict.len());
    }

    #[test]
    fn rejects_bad_magic_and_versions() {
        assert!(parse(b"PK\x03\x04 zip").unwrap_err().contains("bad magic"));
        let mut bytes = npy_bytes("|u1", &[1], &[0]);
        bytes[6] = 9;
        assert!(parse(&bytes).unwrap_err().contains("version 9"));
    }

    #[test]
    fn rejects_malformed_dicts() {
        for dict in [
            "{'descr': '|u1', 'shape': (1,), }",
            "{'descr': '|u1', 'fortran_order': False, 'shape': (x,), }",
            "{'descr': '|u1' 'fortran_order': False, 'shape': (1,)}",
            "['descr']",
            "{'descr: '|u1'",
        ] {
            let msg = parse(&npy_with_dict(dict, &[0])).unwrap_err();
            assert!(msg.starts_with("malformed header"), "{dict}: {msg}");
        }
    }

    #[test]
    fn rejects_a_header_longer_than_the_file() {
        let mut bytes = npy_bytes("|u1", &[1], &[0]);
        bytes.truncate(30);
        assert!(parse(&bytes).unwrap_err().contains("ends inside it"));
    }

    #[test]
    fn reads_fortran_order_and_real_dtypes_in_either_byte_order() {
        let fortran = "{'descr': '>f8', 'fortran_order': True, 'shape': (1,), }";
        let header = parse(&npy_with_dict(fortran, &[0; 8])).unwrap();
        assert!(header.fortran_order);
        assert_eq!(header.dtype.name(), ">float64");
        for (descr, name, size) in [
            ("|b1", "bool", 1),
            (">u1", "uint8", 1),
            ("<i2", "int16", 2),
            ("<u2", "uint16", 2),
            ("<f2", "float16", 2),
            ("=i8", "int64", 8),
        ] {
            let dtype = Dtype::parse(descr).unwrap();
            assert_eq!((dtype.name(), dtype.size), (name.to_string(), size));
        }
        for descr in [
            "<c8", "<U2", "|O", "<M8[ns]", "|V4", "<f16", "<i3", "|b2", "",
        ] {
            let msg = Dtype::parse(descr).unwrap_err();
            assert!(msg.contains("np.ascontiguousarray(a).astype"), "{msg}");
        }
    }

    #[test]
    fn decodes_elements_in_either_byte_order() {
        let dtype = |descr| Dtype::parse(descr).unwrap();
        assert_eq!(dtype("<i2").integer(&(-300i16).to_le_bytes()), Some(-300));
        assert_eq!(dtype(">i2").integer(&(-300i16).to_be_bytes()), Some(-300));
        assert_eq!(dtype(">u2").float(&60000u16.to_be_bytes()), 60000.0);
        assert_eq!(
            dtype("<i8").integer(&i64::MIN.to_le_bytes()),
            Some(i64::MIN)
        );
        assert_eq!(dtype("<u8").integer(&u64::MAX.to_le_bytes()), None);
        assert_eq!(dtype(">f4").float(&1.5f32.to_be_bytes()), 1.5);
        assert_eq!(dtype("<f8").float(&(-0.25f64).to_le_bytes()), -0.25);
        assert_eq!(dtype("<f4").integer(&1.5f32.to_le_bytes()), None);
        // float16: 1.0, -2.5, the smallest subnormal, infinity.
        assert_eq!(dtype("<f2").float(&[0x00, 0x3c]), 1.0);
        assert_eq!(dtype(">f2").float(&[0xc1, 0x00]), -2.5);
        assert_eq!(dtype("<f2").float(&[0x01, 0x00]), 2f32.powi(-24));
        assert_eq!(dtype("<f2").float(&[0x00, 0x7c]), f32::INFINITY);
    }

    #[test]
    fn checks_the_data_length_without_overflowing() {
        let msg = parse(&npy_bytes("<f4", &[2, 3], &[0; 23])).unwrap_err();
        assert_mentions(&msg, &["promises 24 bytes", "found 23"]);
        let huge = [usize::MAX / 2, 3];
        let msg = parse(&npy_bytes("<f4", &huge, &[])).unwrap_err();
        assert!(msg.contains("absurd shape"), "{msg}");
    }

    #[test]
    fn shapes_print_like_numpy() {
        assert_eq!(python_shape(&[3]), "(3,)");
        assert_eq!(python_shape(&[2, 28, 28]), "(2, 28, 28)");
        assert_eq!(python_shape(&[]), "()");
    }
}
