//! Expectations: the calls that count as correct for a scenario, and the
//! verdict on one turn's calls.

use serde::Deserialize;

use super::matcher::ArgumentMatchers;
use crate::call::ParsedCall;

/// Whether expected calls must come in the listed order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Strict,
    #[default]
    Any,
}

#[derive(Debug, Clone)]
pub struct ExpectedCall {
    pub name: String,
    pub arguments: ArgumentMatchers,
}

/// What a correct turn looks like.
#[derive(Debug, Clone)]
pub enum Expectation {
    /// Calling any tool is wrong.
    NoCall,
    Calls {
        calls: Vec<ExpectedCall>,
        order: Order,
    },
}

/// How one turn's calls compare with the expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Match,
    /// A call was made where none was wanted.
    UnexpectedCall,
    /// Fewer calls than expected.
    MissingCall,
    /// The right number of calls, but not the right ones.
    WrongCall,
}

impl Verdict {
    /// The failure kind a mismatch is counted as.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Match => "match",
            Verdict::UnexpectedCall => "unexpected_call",
            Verdict::MissingCall => "missing_call",
            Verdict::WrongCall => "wrong_call",
        }
    }
}

impl Expectation {
    pub fn verdict(&self, calls: &[ParsedCall]) -> Verdict {
        match self {
            Expectation::NoCall if calls.is_empty() => Verdict::Match,
            Expectation::NoCall => Verdict::UnexpectedCall,
            Expectation::Calls {
                calls: expected,
                order,
            } => {
                if calls.len() < expected.len() {
                    return Verdict::MissingCall;
                }
                if calls.len() > expected.len() {
                    return Verdict::UnexpectedCall;
                }
                let fits = |e: &ExpectedCall, c: &ParsedCall| match c {
                    ParsedCall::Ok(call) => {
                        call.name == e.name && e.arguments.matches(&call.arguments)
                    }
                    ParsedCall::Malformed(_) => false,
                };
                let matched = match order {
                    Order::Strict => expected.iter().zip(calls).all(|(e, c)| fits(e, c)),
                    Order::Any => {
                        let mut used = vec![false; calls.len()];
                        assign(expected, calls, &mut used, &fits)
                    }
                };
                if matched {
                    Verdict::Match
                } else {
                    Verdict::WrongCall
                }
            }
        }
    }

    /// The calls a correct model makes (for mocks): names and example arguments.
    pub fn expected_calls(&self) -> &[ExpectedCall] {
        match self {
            Expectation::NoCall => &[],
            Expectation::Calls { calls, .. } => calls,
        }
    }
}

/// Backtracking assignment of expected calls to actual ones (turns are small).
fn assign(
    expected: &[ExpectedCall],
    calls: &[ParsedCall],
    used: &mut [bool],
    fits: &impl Fn(&ExpectedCall, &ParsedCall) -> bool,
) -> bool {
    let Some((first, rest)) = expected.split_first() else {
        return true;
    };
    for i in 0..calls.len() {
        if !used[i] && fits(first, &calls[i]) {
            used[i] = true;
            if assign(rest, calls, used, fits) {
                return true;
            }
            used[i] = false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ToolCall;
    use serde_json::{Value, json};

    fn expected(name: &str, args: Value) -> ExpectedCall {
        ExpectedCall {
            name: name.into(),
            arguments: ArgumentMatchers::from_map(args.as_object().unwrap()).unwrap(),
        }
    }

    fn call(name: &str, args: Value) -> ParsedCall {
        ParsedCall::Ok(ToolCall {
            id: "x".into(),
            name: name.into(),
            arguments: args,
        })
    }

    #[test]
    fn order_any_finds_a_matching_even_when_greedy_would_fail() {
        let expectation = Expectation::Calls {
            calls: vec![
                expected("f", json!({"x": {"$present": true, "$example": 1}})),
                expected("f", json!({"x": 1})),
            ],
            order: Order::Any,
        };
        let calls = [call("f", json!({"x": 1})), call("f", json!({"x": 2}))];
        assert_eq!(expectation.verdict(&calls), Verdict::Match);
        let strict = Expectation::Calls {
            calls: expectation.expected_calls().to_vec(),
            order: Order::Strict,
        };
        assert_eq!(strict.verdict(&calls), Verdict::WrongCall);
    }

    #[test]
    fn counts_and_no_call_give_their_own_verdicts() {
        let one = Expectation::Calls {
            calls: vec![expected("f", json!({}))],
            order: Order::Any,
        };
        assert_eq!(one.verdict(&[]), Verdict::MissingCall);
        assert_eq!(
            one.verdict(&[call("f", json!({})), call("f", json!({}))]),
            Verdict::UnexpectedCall
        );
        assert_eq!(Expectation::NoCall.verdict(&[]), Verdict::Match);
        assert_eq!(
            Expectation::NoCall.verdict(&[call("f", json!({}))]),
            Verdict::UnexpectedCall
        );
    }
}
