//! BFCL evaluates a binary operation in an argument (`2 * 3.1416`,
//! `25/1`) with Python's `eval`. This is that arithmetic on literals:
//! numbers (a bool counts as an int), strings and lists, with Python's
//! results: `/` gives a float, `//` and `%` floor, `**` with a negative
//! exponent gives a float, dividing by zero fails. Names and calls fail,
//! as they mostly would in BFCL, where nothing is defined for them.

use serde_json::Value;

use super::{DecodeError, fail};

#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i64),
    Float(f64),
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Bool(b) => Some(Number::Int(i64::from(*b))),
        Value::Number(n) if n.is_f64() => n.as_f64().map(Number::Float),
        Value::Number(n) => n.as_i64().map(Number::Int),
        _ => None,
    }
}

fn float(x: f64) -> Result<Value, DecodeError> {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .ok_or_else(|| DecodeError::from("the result is not a finite number"))
}

fn overflow() -> DecodeError {
    DecodeError::from("the result is out of range")
}

/// `left op right`, as Python computes it.
pub fn binary(op: &str, left: &Value, right: &Value) -> Result<Value, DecodeError> {
    match (left, right) {
        (Value::String(a), Value::String(b)) if op == "+" => {
            return Ok(Value::String(a.clone() + b));
        }
        (Value::Array(a), Value::Array(b)) if op == "+" => {
            return Ok(Value::Array(a.iter().chain(b).cloned().collect()));
        }
        (Value::String(s), n) | (n, Value::String(s)) if op == "*" => {
            if let Some(Number::Int(times)) = number(n) {
                let times = repetitions(times, s.len())?;
                return Ok(Value::String(s.repeat(times)));
            }
        }
        (Value::Array(items), n) | (n, Value::Array(items)) if op == "*" => {
            if let Some(Number::Int(times)) = number(n) {
                let times = repetitions(times, items.len())?;
                return Ok(Value::Array(
                    (0..times).flat_map(|_| items.iter().cloned()).collect(),
                ));
            }
        }
        _ => {}
    }
    let (Some(a), Some(b)) = (number(left), number(right)) else {
        return fail(format!("Python cannot apply {op} to these values"));
    };
    match (a, b) {
        (Number::Int(a), Number::Int(b)) => ints(op, a, b),
        (a, b) => floats(op, as_f64(a), as_f64(b)),
    }
}

/// Python's results longer than this fail here, as they would run out of
/// memory (a repetition); what a model writes is far shorter.
const MAX_REPEATED: usize = 1 << 24;

/// How many times to repeat `len` items (a negative count is none); `Err`
/// when the result would be too long to build.
fn repetitions(times: i64, len: usize) -> Result<usize, DecodeError> {
    let times = usize::try_from(times).unwrap_or(0);
    match times.checked_mul(len) {
        Some(total) if total <= MAX_REPEATED => Ok(times),
        _ => fail("the result is too long"),
    }
}

fn as_f64(n: Number) -> f64 {
    match n {
        Number::Int(i) => i as f64,
        Number::Float(f) => f,
    }
}

fn ints(op: &str, a: i64, b: i64) -> Result<Value, DecodeError> {
    let zero = || fail("division by zero");
    let int = |r: Option<i64>| r.map(Value::from).ok_or_else(overflow);
    match op {
        "+" => int(a.checked_add(b)),
        "-" => int(a.checked_sub(b)),
        "*" => int(a.checked_mul(b)),
        "/" if b == 0 => zero(),
        "/" => float(a as f64 / b as f64),
        "//" | "%" if b == 0 => zero(),
        "//" => {
            let q = a.checked_div(b).ok_or_else(overflow)?;
            Ok(Value::from(if a % b != 0 && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }))
        }
        "%" => {
            // Only `i64::MIN % -1` overflows; Python's answer is 0.
            let r = a.checked_rem(b).unwrap_or(0);
            Ok(Value::from(if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            }))
        }
        "**" if b >= 0 => int(u32::try_from(b).ok().and_then(|e| a.checked_pow(e))),
        "**" if a == 0 => zero(),
        "**" => float((a as f64).powf(b as f64)),
        other => fail(format!("{other} is not arithmetic BFCL's eval is read for")),
    }
}

fn floats(op: &str, a: f64, b: f64) -> Result<Value, DecodeError> {
    if matches!(op, "/" | "//" | "%") && b == 0.0 {
        return fail("division by zero");
    }
    float(match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => a / b,
        "//" => (a / b).floor(),
        "%" => {
            let r = a % b;
            if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                r + b
            } else {
                r
            }
        }
        // A negative base to a fractional power is complex in Python.
        "**" if a < 0.0 && b.fract() != 0.0 => return fail("a complex result"),
        "**" if a == 0.0 && b < 0.0 => return fail("division by zero"),
        "**" => a.powf(b),
        other => return fail(format!("{other} is not arithmetic BFCL's eval is read for")),
    })
}

/// `op operand` for `-`, `+`, `~` and `not`, as Python computes it.
pub fn unary(op: &str, operand: &Value) -> Result<Value, DecodeError> {
    if op == "not" {
        return Ok(Value::Bool(!truthy(operand)));
    }
    match (op, number(operand)) {
        ("-", Some(Number::Int(i))) => i.checked_neg().map(Value::from).ok_or_else(overflow),
        ("-", Some(Number::Float(f))) => float(-f),
        ("+", Some(Number::Int(i))) => Ok(Value::from(i)),
        ("+", Some(Number::Float(f))) => float(f),
        ("~", Some(Number::Int(i))) => Ok(Value::from(!i)),
        _ => fail(format!("Python cannot apply {op} to this value")),
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arithmetic_gives_pythons_results() {
        let b = |op, l: Value, r: Value| binary(op, &l, &r);
        assert_eq!(b("*", json!(3), json!(2.5)), Ok(json!(7.5)));
        assert_eq!(b("/", json!(25), json!(1)), Ok(json!(25.0)));
        assert_eq!(b("//", json!(-7), json!(2)), Ok(json!(-4)));
        assert_eq!(b("%", json!(-7), json!(2)), Ok(json!(1)));
        assert_eq!(b("%", json!(7.5), json!(-2)), Ok(json!(-0.5)));
        assert_eq!(b("**", json!(2), json!(10)), Ok(json!(1024)));
        assert_eq!(b("**", json!(2), json!(-1)), Ok(json!(0.5)));
        assert_eq!(b("+", json!(true), json!(1)), Ok(json!(2)));
        assert_eq!(b("+", json!("a"), json!("b")), Ok(json!("ab")));
        assert_eq!(b("*", json!([1]), json!(2)), Ok(json!([1, 1])));
        assert!(b("/", json!(1), json!(0)).is_err());
        assert!(b("+", json!("a"), json!(1)).is_err());
        assert_eq!(unary("not", &json!(0)), Ok(json!(true)));
        assert_eq!(unary("~", &json!(5)), Ok(json!(-6)));
    }

    #[test]
    fn extreme_operands_give_an_error_or_pythons_answer_never_a_panic() {
        let b = |op, l: Value, r: Value| binary(op, &l, &r);
        assert_eq!(b("%", json!(i64::MIN), json!(-1)), Ok(json!(0)));
        assert!(b("//", json!(i64::MIN), json!(-1)).is_err());
        assert!(b("*", json!("ab"), json!(i64::MAX)).is_err());
        assert!(b("*", json!([1, 2]), json!(1_i64 << 40)).is_err());
        assert_eq!(b("*", json!("ab"), json!(-3)), Ok(json!("")));
        assert_eq!(b("*", json!(2), json!("ab")), Ok(json!("abab")));
    }
}
