//! How instances are written to validators outside toolgauge. JSON has
//! several spellings of one integer (`100`, `100.0`, `1e2`), and parsers
//! read them into different types: Python's `json` gives an int for the
//! first and a float for the others. Generated instances hold integers
//! both as integers and as floats; here an integral float that is a
//! multiple of ten is written in exponent form (`1e2`), so external
//! validators see all three spellings.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{CompactFormatter, Formatter, Serializer};

/// serde_json's compact output, with exponent spellings.
struct Spellings;

impl Formatter for Spellings {
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        // Below 2^53 every integral float is exact.
        if value.fract() == 0.0 && value != 0.0 && value.abs() < 9.0e15 {
            let (mut mantissa, mut exponent) = (value as i64, 0);
            while mantissa % 10 == 0 {
                mantissa /= 10;
                exponent += 1;
            }
            if exponent > 0 {
                return write!(writer, "{mantissa}e{exponent}");
            }
        }
        CompactFormatter.write_f64(writer, value)
    }
}

/// Write `value` as an external validator receives it.
pub fn write<W: Write>(writer: W, value: &impl Serialize) -> io::Result<()> {
    value
        .serialize(&mut Serializer::with_formatter(writer, Spellings))
        .map_err(io::Error::from)
}

/// `value` as an external validator receives it.
pub fn to_string(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    write(&mut out, value).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_that_are_multiples_of_ten_use_the_exponent_spelling() {
        let value =
            json!({"a": 100.0, "b": 5.0, "c": 5, "d": -20.0, "e": 0.5, "f": 0.0, "g": [1e21]});
        assert_eq!(
            to_string(&value),
            r#"{"a":1e2,"b":5.0,"c":5,"d":-2e1,"e":0.5,"f":0.0,"g":[1e+21]}"#
        );
        // Every spelling reads back as the same number.
        let back: Value = serde_json::from_str(&to_string(&value)).unwrap();
        assert_eq!(back["a"].as_f64(), Some(100.0));
        assert_eq!(back["d"].as_f64(), Some(-20.0));
    }
}
