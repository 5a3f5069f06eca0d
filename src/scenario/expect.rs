//! Expectations: the calls that count as correct for a scenario, and the
//! verdict on one turn's calls.

use serde::Deserialize;

use super::matcher::ArgumentMatchers;
use crate::bfcl::rules::{BfclCall, Mismatch, Reason};
use crate::call::{Failure, ParsedCall};

/// Whether expected calls must come in the listed order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Strict,
    #[default]
    Any,
}

/// How expected calls are matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rules {
    /// Values and matchers (`scenario::matcher`).
    #[default]
    Exact,
    /// BFCL's rules (`bfcl::rules`).
    Bfcl,
}

#[derive(Debug, Clone)]
pub struct ExpectedCall {
    pub name: String,
    /// The arguments' matchers; under BFCL rules, only the example values.
    pub arguments: ArgumentMatchers,
    /// Set under BFCL rules: the call is judged by them.
    pub bfcl: Option<BfclCall>,
}

impl ExpectedCall {
    fn fits(&self, call: &ParsedCall) -> bool {
        match (call, &self.bfcl) {
            (ParsedCall::Ok(call), Some(rule)) => {
                rule.check(&call.name, call.arguments.as_value()).is_ok()
            }
            (ParsedCall::Ok(call), None) => {
                call.name == self.name && self.arguments.matches_arguments(&call.arguments)
            }
            (ParsedCall::Malformed(_), _) => false,
        }
    }
}

/// What a correct turn looks like.
#[derive(Debug, Clone)]
pub enum Expectation {
    /// Calling any tool is wrong.
    NoCall,
    /// Any call is right; no call is wrong.
    AnyCall,
    Calls {
        calls: Vec<ExpectedCall>,
        order: Order,
    },
    /// Judged by BFCL's rules alone, as BFCL's own runner judges: the
    /// inner expectation's calls carry the rules (`bfcl::rules`).
    Bfcl(Box<Expectation>),
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
    /// The failure a mismatch is counted as (`None` for a match).
    pub fn failure(self) -> Option<Failure> {
        match self {
            Verdict::Match => None,
            Verdict::UnexpectedCall => Some(Failure::UnexpectedCall),
            Verdict::MissingCall => Some(Failure::MissingCall),
            Verdict::WrongCall => Some(Failure::WrongCall),
        }
    }
}

impl Expectation {
    /// The one door a turn is judged through. `failures` holds what the
    /// pipeline found (schema errors, unknown tools, ...): toolgauge's
    /// verdict adds a mismatch when they are none; under BFCL's rules
    /// BFCL's verdict alone decides (a failed one keeps the failures that
    /// explain it, or names the mismatch). Gives why a failed turn does
    /// not match, in BFCL's words, under BFCL's rules.
    pub fn judge(&self, calls: &[ParsedCall], failures: &mut Vec<Failure>) -> Option<Mismatch> {
        match self {
            Expectation::Bfcl(inner) => match inner.bfcl_verdict(calls).failure() {
                None => failures.clear(),
                Some(mismatch) if failures.is_empty() => failures.push(mismatch),
                Some(_) => {}
            },
            _ if failures.is_empty() => failures.extend(self.verdict(calls).failure()),
            _ => {}
        }
        if failures.is_empty() {
            None
        } else {
            self.reason(calls)
        }
    }

    /// What a correct turn looks like, whichever rules judge it.
    pub fn plain(&self) -> &Expectation {
        match self {
            Expectation::Bfcl(inner) => inner.plain(),
            other => other,
        }
    }

    pub fn verdict(&self, calls: &[ParsedCall]) -> Verdict {
        match self {
            Expectation::Bfcl(inner) => inner.verdict(calls),
            Expectation::NoCall if calls.is_empty() => Verdict::Match,
            Expectation::NoCall => Verdict::UnexpectedCall,
            Expectation::AnyCall if calls.is_empty() => Verdict::MissingCall,
            Expectation::AnyCall => Verdict::Match,
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
                let fits = |e: &ExpectedCall, c: &ParsedCall| e.fits(c);
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

    /// The verdict BFCL's own runner gives: relevance (a call expected, or
    /// none) by whether the output decodes to a non-empty list of calls
    /// (a call whose arguments do not decode makes the whole output
    /// undecodable: "no call"), and calls by BFCL's rules; toolgauge's
    /// schema validation plays no part.
    pub fn bfcl_verdict(&self, calls: &[ParsedCall]) -> Verdict {
        let decoded = calls.iter().all(|c| matches!(c, ParsedCall::Ok(_)));
        let has_call = decoded && !calls.is_empty();
        match self {
            Expectation::NoCall if has_call => Verdict::UnexpectedCall,
            Expectation::NoCall => Verdict::Match,
            Expectation::AnyCall if has_call => Verdict::Match,
            Expectation::AnyCall => Verdict::MissingCall,
            Expectation::Calls { .. } => self.verdict(calls),
            Expectation::Bfcl(inner) => inner.bfcl_verdict(calls),
        }
    }

    /// Why the calls do not match, in BFCL's words, for expectations under
    /// BFCL rules (`None` otherwise, and when they match).
    pub fn reason(&self, calls: &[ParsedCall]) -> Option<Mismatch> {
        if let Expectation::Bfcl(inner) = self {
            return inner.reason(calls);
        }
        let Expectation::Calls {
            calls: expected, ..
        } = self
        else {
            return None;
        };
        if expected.iter().any(|e| e.bfcl.is_none()) {
            return None;
        }
        // BFCL decodes the whole output before it counts the calls.
        if calls.iter().any(|c| matches!(c, ParsedCall::Malformed(_))) {
            return Some(Reason::DecoderFailed.into());
        }
        if calls.len() != expected.len() {
            return Some(Reason::WrongCount.into());
        }
        if let ([one], [ParsedCall::Ok(call)]) = (expected.as_slice(), calls) {
            return one
                .bfcl
                .as_ref()?
                .check(&call.name, call.arguments.as_value())
                .err();
        }
        (self.verdict(calls) != Verdict::Match).then(|| Reason::CannotFindMatch.into())
    }

    /// The calls a correct model makes (for mocks): names and example arguments.
    pub fn expected_calls(&self) -> &[ExpectedCall] {
        match self {
            Expectation::NoCall | Expectation::AnyCall => &[],
            Expectation::Calls { calls, .. } => calls,
            Expectation::Bfcl(inner) => inner.expected_calls(),
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
            bfcl: None,
        }
    }

    fn call(name: &str, args: Value) -> ParsedCall {
        ParsedCall::Ok(ToolCall {
            id: "x".into(),
            name: name.into(),
            arguments: args.try_into().unwrap(),
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

    #[test]
    fn an_undecodable_output_is_decoder_failed_before_its_calls_are_counted() {
        let rule = |name: &str| {
            let params = json!({"x": [1]});
            let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
            let mut call = expected(name, json!({"x": 1}));
            call.bfcl =
                Some(BfclCall::new(name, params.as_object().unwrap(), &schema, None).unwrap());
            call
        };
        let two = Expectation::Calls {
            calls: vec![rule("f"), rule("g")],
            order: Order::Any,
        };
        // One undecodable output where two calls are expected.
        let undecodable = [ParsedCall::Malformed(crate::call::MalformedCall {
            id: "bfcl_0".into(),
            name: String::new(),
            raw_arguments: "Sure! [...]".into(),
            problem: "not calls".into(),
        })];
        assert_eq!(two.reason(&undecodable), Some(Reason::DecoderFailed.into()));
        assert_eq!(
            two.reason(&[call("f", json!({"x": 1}))]),
            Some(Reason::WrongCount.into())
        );
        assert_eq!(
            two.reason(&[call("g", json!({"x": 1})), call("f", json!({"x": 2}))]),
            Some(Reason::CannotFindMatch.into())
        );
    }
}
