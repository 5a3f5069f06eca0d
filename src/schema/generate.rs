//! Valid instances of a JSON Schema, as proptest strategies (so that
//! failures shrink, within the option a choice drew: see `Pick`). Every
//! instance is checked against the schema before use: a generator that
//! guesses wrong produces fewer cases, never a false "valid" one.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Just, NewTree, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

use super::{Compiled, required_names};

/// How far past a lower bound generated sizes and numbers go.
const SPREAD: u64 = 6;

/// A strategy for values of `schema` (best effort; see the module doc).
pub fn strategy(schema: &Value) -> BoxedStrategy<Value> {
    let Some(s) = schema.as_object() else {
        return Just(Value::Null).boxed();
    };
    if let Some(value) = s.get("const") {
        return Just(value.clone()).boxed();
    }
    if let Some(options) = s
        .get("enum")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
    {
        return prop::sample::select(options.clone()).boxed();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = s
            .get(key)
            .and_then(Value::as_array)
            .filter(|o| !o.is_empty())
        {
            return Pick::new(options.iter().map(|o| (1, strategy(o)))).boxed();
        }
    }
    if let Some(parts) = s.get("allOf").and_then(Value::as_array) {
        let mut merged = s.clone();
        merged.remove("allOf");
        for part in parts.iter().filter_map(Value::as_object) {
            for (key, value) in part {
                match (merged.get_mut(key), value) {
                    (Some(Value::Object(mine)), Value::Object(theirs)) => {
                        mine.extend(theirs.clone())
                    }
                    (Some(Value::Array(mine)), Value::Array(theirs)) => mine.extend(theirs.clone()),
                    (None, _) => {
                        merged.insert(key.clone(), value.clone());
                    }
                    _ => {}
                }
            }
        }
        return strategy(&Value::Object(merged));
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if s.contains_key("properties") => vec!["object"],
        _ => vec!["string", "integer", "boolean"],
    };
    Pick::new(types.into_iter().map(|t| (1, typed(s, t)))).boxed()
}

fn typed(s: &Map<String, Value>, ty: &str) -> BoxedStrategy<Value> {
    match ty {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" | "number" => numbers(s, ty == "integer"),
        "string" => strings(s),
        "array" => arrays(s),
        _ => objects(s),
    }
}

/// A stated count keyword (`minLength`, `maxItems`, ...).
fn count(s: &Map<String, Value>, key: &str) -> Option<u64> {
    s.get(key).and_then(Value::as_u64)
}

/// Strings of the schema's format or pattern, else of its lengths.
fn strings(s: &Map<String, Value>) -> BoxedStrategy<Value> {
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && let Some(values) = format_values(format)
    {
        return prop::sample::select(values)
            .prop_map(|v| Value::String(v.to_owned()))
            .boxed();
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && let Ok(strategy) = proptest::string::string_regex(&ecma_classes(
            pattern.trim_start_matches('^').trim_end_matches('$'),
        ))
    {
        return strategy.prop_map(Value::String).boxed();
    }
    let min = count(s, "minLength").unwrap_or(0) as usize;
    let stated_max = count(s, "maxLength").map(|m| (m as usize).max(min));
    let max = stated_max.unwrap_or(min + SPREAD as usize * 2);
    // Lengths count code points, as JSON Schema does; the bounds
    // themselves are drawn often, in Unicode too.
    let mut lengths = vec![(6, text(ASCII, min, max.min(min + SPREAD as usize * 4)))];
    lengths.push((3, text(UNICODE, min, max.min(min + SPREAD as usize * 4))));
    lengths.push((1, text(UNICODE, min, min)));
    if let Some(max) = stated_max {
        lengths.push((1, text(UNICODE, max, max)));
    }
    Pick::new(lengths).boxed()
}

/// Arrays of the schema's items, of its sizes and at its bounds.
fn arrays(s: &Map<String, Value>) -> BoxedStrategy<Value> {
    let items = s.get("items").map_or_else(any_json, strategy);
    let min = count(s, "minItems").unwrap_or(0) as usize;
    let stated_max = count(s, "maxItems").map(|m| (m as usize).max(min));
    let max = stated_max.unwrap_or(min + 3).min(min + SPREAD as usize);
    let sized = |low: usize, high: usize| {
        prop::collection::vec(items.clone(), low..=high)
            .prop_map(Value::Array)
            .boxed()
    };
    let mut sizes = vec![(6, sized(min, max)), (1, sized(min, min))];
    if let Some(stated) = stated_max.filter(|m| *m <= min + 4 * SPREAD as usize) {
        sizes.push((1, sized(stated, stated)));
    }
    Pick::new(sizes).boxed()
}

/// Objects with every required property and some optional ones (and,
/// where the schema allows, one more).
fn objects(s: &Map<String, Value>) -> BoxedStrategy<Value> {
    let required: Vec<String> = required_names(s).map(str::to_owned).collect();
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = s
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let name = name.clone();
            let value = strategy(property);
            if required.contains(&name) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                maybe(0.5, value.prop_map(move |v| (name.clone(), v)).boxed())
            }
        })
        .collect();
    let object = fields.prop_map(|fields| fields.into_iter().flatten().collect::<Map<_, _>>());
    // Where the schema allows more properties, a valid instance
    // sometimes has one: any JSON, nested deep.
    let open = !matches!(
        s.get("additionalProperties"),
        Some(Value::Bool(false) | Value::Object(_))
    ) && !s.contains_key("unevaluatedProperties")
        && !s.contains_key("propertyNames")
        && !s.contains_key("patternProperties");
    if !open {
        return object.prop_map(Value::Object).boxed();
    }
    (object, maybe(0.15, any_json()))
        .prop_map(|(mut object, extra)| {
            if let Some(extra) = extra {
                let mut name = "extra".to_owned();
                while object.contains_key(&name) {
                    name.push('_');
                }
                object.insert(name, extra);
            }
            Value::Object(object)
        })
        .boxed()
}

/// Numbers within the schema's bounds: its bounds themselves, integers
/// both as integers (`5`) and as floats (`5.0`, which external validators
/// may also read as `5e0`-style spellings, see `wire`), and numbers with
/// fractions where the type allows.
fn numbers(s: &Map<String, Value>, integer: bool) -> BoxedStrategy<Value> {
    let number = |key: &str| s.get(key).and_then(Value::as_f64);
    let low = number("minimum")
        .or(number("exclusiveMinimum").map(|m| m + 1.0))
        .unwrap_or(-1000.0);
    let high = number("maximum")
        .or(number("exclusiveMaximum").map(|m| m - 1.0))
        .unwrap_or(low.max(0.0) + 1000.0)
        .max(low);
    let (low, high) = (low.ceil() as i64, high.floor() as i64);
    let whole: BoxedStrategy<i64> = match number("multipleOf").filter(|m| *m > 0.0) {
        Some(step) if integer || step.fract() == 0.0 => {
            let step = step as i64;
            let (first, last) = (low.div_euclid(step.max(1)), high.div_euclid(step.max(1)));
            (first..=last.max(first))
                .prop_map(move |k| k * step)
                .boxed()
        }
        Some(step) => {
            let (first, last) = (
                (low as f64 / step).ceil() as i64,
                (high as f64 / step).floor() as i64,
            );
            return (first..=last.max(first))
                .prop_map(move |k| json!(k as f64 * step))
                .boxed();
        }
        None => (low..=high.max(low)).boxed(),
    };
    let mut options: Vec<(u32, BoxedStrategy<Value>)> = vec![
        (6, whole.clone().prop_map(|n| json!(n)).boxed()),
        (2, whole.clone().prop_map(|n| json!(n as f64)).boxed()),
    ];
    for bound in ["minimum", "maximum"].into_iter().filter_map(number) {
        options.push((1, Just(json!(bound)).boxed()));
        if bound.fract() == 0.0 {
            options.push((1, Just(json!(bound as i64)).boxed()));
        }
    }
    if !integer {
        options.push((
            3,
            (whole, 1u8..4)
                .prop_map(|(n, q)| json!(n as f64 + f64::from(q) * 0.25))
                .boxed(),
        ));
    }
    Pick::new(options).boxed()
}

/// Characters of plain text.
const ASCII: &[char] = &[
    'a', 'b', 'c', 'd', 'e', 'k', 'm', 'o', 'r', 's', 't', 'x', 'z', ' ', 'A', 'Q', '0', '7', '-',
    '.',
];

/// Characters that catch validators counting bytes or UTF-16 units, or
/// normalising: accented and non-Latin letters, a combining mark, a
/// zero-width joiner, and characters beyond the Basic Multilingual Plane.
const UNICODE: &[char] = &[
    'a', 'z', ' ', 'é', 'ß', 'Ж', 'ع', '中', '\u{301}', '\u{200d}', '😀', '𝄞', '🇫', '𐍈',
];

/// Strings of `low..=high` code points drawn from `alphabet`.
fn text(alphabet: &'static [char], low: usize, high: usize) -> BoxedStrategy<Value> {
    prop::collection::vec(prop::sample::select(alphabet), low..=high.max(low))
        .prop_map(|chars| Value::String(chars.into_iter().collect()))
        .boxed()
}

/// Any JSON value, arrays and objects nested up to eight deep.
fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(|n| json!(n)),
        (-1000i64..1000).prop_map(|n| json!(n as f64 / 8.0)),
        text(UNICODE, 0, 6),
    ];
    leaf.prop_recursive(8, 32, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((text(ASCII, 1, 4), inner), 0..3).prop_map(|fields| {
                Value::Object(
                    fields
                        .into_iter()
                        .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), v))
                        .collect(),
                )
            }),
        ]
    })
    .boxed()
}

/// Several valid values per `format`, the unusual spellings among them:
/// only those the reference validator accepts are used.
fn format_values(format: &str) -> Option<Vec<&'static str>> {
    Some(match format {
        "date" => vec!["2026-11-22", "2024-02-29", "0001-01-01", "9999-12-31"],
        "date-time" => vec![
            "2026-11-22T10:00:00Z",
            "2026-11-22T10:00:00.123456+05:30",
            "2024-02-29t23:59:59z",
            "1990-12-31T15:59:60-08:00",
        ],
        "time" => vec!["10:00:00Z", "23:59:59.5+01:00", "00:00:00-12:00"],
        "email" => vec![
            "ada@example.com",
            "first.last+tag@sub.example.org",
            "x@example.co",
            "o'brien@example.ie",
        ],
        "uri" | "iri" => vec![
            "https://example.com/x",
            "http://example.com:8080/a/b?q=1&r=%20#frag",
            "urn:isbn:0451450523",
            "mailto:ada@example.com",
        ],
        "uri-reference" | "iri-reference" => {
            vec!["https://example.com/x", "../a/b?c", "#frag", ""]
        }
        "uuid" => vec![
            "0b5e3a1c-7d2f-4c1e-9a3b-2f6d8e4c1a70",
            "0B5E3A1C-7D2F-4C1E-9A3B-2F6D8E4C1A70",
            "00000000-0000-0000-0000-000000000000",
        ],
        "ipv4" => vec!["192.0.2.7", "0.0.0.0", "255.255.255.255"],
        "ipv6" => vec![
            "2001:db8::7",
            "::1",
            "::",
            "::ffff:192.0.2.1",
            "fe80::1:2:3:4",
        ],
        "hostname" | "idn-hostname" => {
            vec!["example.com", "a", "xn--bcher-kva.example", "a-1.b-2.c3"]
        }
        "duration" => vec!["P1DT2H", "PT0.5S", "P1W", "P1Y2M3DT4H5M6S"],
        "json-pointer" => vec!["/a/0", "", "/a~1b/c~0d", "/"],
        _ => return None,
    })
}

/// JSON Schema patterns are ECMA-262 regexes, where `\d` and `\w` are
/// ASCII; Rust's regex syntax makes them Unicode, and most Unicode digits
/// drawn would then fail the pattern and be thrown away.
fn ecma_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('w') => out.push_str("[A-Za-z0-9_]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Up to `n` distinct-draw valid instances, deterministic from `seed`.
pub fn valid_instances(schema: &Value, validator: &Compiled, n: usize, seed: u64) -> Vec<Value> {
    ValidInstances::new(schema, seed).draw(validator, n)
}

/// A stream of valid instances of one schema, deterministic from its seed:
/// drawn a batch at a time, so that no run holds more than a batch.
pub struct ValidInstances {
    runner: TestRunner,
    strategy: BoxedStrategy<Value>,
}

impl ValidInstances {
    pub fn new(schema: &Value, seed: u64) -> ValidInstances {
        // XorShift (fast, and enough for test data) needs a non-zero seed.
        let mut seed_bytes = [0u8; 16];
        seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
        seed_bytes[8..].copy_from_slice(&(seed ^ 0x9E37_79B9_7F4A_7C15).to_le_bytes());
        ValidInstances {
            runner: TestRunner::new_with_rng(
                Config::default(),
                TestRng::from_seed(RngAlgorithm::XorShift, &seed_bytes),
            ),
            strategy: strategy(schema),
        }
    }

    /// The next `n` valid instances, in at most `10 * n` draws: fewer when
    /// the generator guesses wrong that often.
    pub fn draw(&mut self, validator: &Compiled, n: usize) -> Vec<Value> {
        let mut found = Vec::with_capacity(n);
        for _ in 0..n * 10 {
            if found.len() == n {
                break;
            }
            let Ok(tree) = self.strategy.new_tree(&mut self.runner) else {
                break;
            };
            let value = proptest::strategy::ValueTree::current(&tree);
            if validator.full_is_valid(&value) {
                found.push(value);
            }
        }
        found
    }
}

/// One of weighted strategies, drawn as proptest's `Union` draws (the
/// same random numbers, so the same values for a seed), without the lazy
/// trees `Union` keeps of the options before the one drawn (each with a
/// copy of the runner), which only shrinking across options would use:
/// a value shrinks within the option drawn.
#[derive(Debug, Clone)]
struct Pick<T> {
    options: Vec<(u32, BoxedStrategy<T>)>,
    total: u64,
}

impl<T: std::fmt::Debug + 'static> Pick<T> {
    fn new(options: impl IntoIterator<Item = (u32, BoxedStrategy<T>)>) -> Pick<T> {
        let options: Vec<_> = options.into_iter().collect();
        let total = options.iter().map(|(w, _)| u64::from(*w)).sum();
        assert!(total > 0, "Pick needs an option of some weight");
        Pick { options, total }
    }
}

impl<T: std::fmt::Debug + 'static> Strategy for Pick<T> {
    type Tree = Box<dyn ValueTree<Value = T>>;
    type Value = T;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        // Union: a uniform draw below the total, the option whose running
        // total first passes it; each option before it forks the
        // generator (its lazy tree's runner).
        let drawn = proptest::num::sample_uniform_incl(runner, 0, self.total - 1);
        let mut running = 0;
        let pick = self
            .options
            .iter()
            .take_while(|(weight, _)| {
                running += u64::from(*weight);
                running <= drawn
            })
            .count();
        for _ in 0..pick {
            runner.new_rng();
        }
        self.options[pick].1.new_tree(runner)
    }
}

/// `prop::option::weighted(probability, value)`, drawn as it draws (a
/// two-way `Union`, nothing first), by [`Pick`].
fn maybe<T: Clone + std::fmt::Debug + 'static>(
    probability: f64,
    value: BoxedStrategy<T>,
) -> BoxedStrategy<Option<T>> {
    let (some, none) = proptest::strategy::float_to_weight(probability);
    Pick::new([
        (none, Just(None).boxed()),
        (some, value.prop_map(Some).boxed()),
    ])
    .boxed()
}
