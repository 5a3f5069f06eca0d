//! Validate: our path (tool lookup, compiled validator, error wording)
//! against raw `jsonschema` `is_valid` on the same inputs as the floor;
//! the anchors' small schemas (cache-hot, the first 1,000 workload calls
//! cycled as in the Node anchor's h1/h2 rows), and medium and large
//! schemas with valid and invalid inputs.

#[path = "common/inputs.rs"]
mod inputs;
#[path = "common/workload.rs"]
mod workload;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::{Map, Value, json};
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::pipeline::validate;
use toolgauge::tool::{Registry, ToolEnv, ToolSource};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn call(name: &str, arguments: Value) -> ParsedCall {
    ParsedCall::Ok(ToolCall {
        id: "call_1".to_owned(),
        name: name.to_owned(),
        arguments: arguments
            .try_into()
            .expect("the workload's arguments are objects"),
    })
}

fn large() -> (Value, Value, Value) {
    let mut properties = Map::new();
    let mut valid = Map::new();
    let mut invalid = Map::new();
    for i in 0..60 {
        let (property, good, bad) = match i % 4 {
            0 => (
                json!({"type": "string", "maxLength": 40}),
                json!(format!("value {i}")),
                json!(i),
            ),
            1 => (
                json!({"type": "integer", "minimum": 0, "maximum": 1000}),
                json!(i * 3),
                json!(-5),
            ),
            2 => (
                json!({"enum": ["a", "b", "c", "d"]}),
                json!("c"),
                json!("z"),
            ),
            _ => (
                json!({"type": "array", "items": {"type": "number"}, "maxItems": 8}),
                json!([1.5, 2, 3]),
                json!(["x"]),
            ),
        };
        properties.insert(format!("field_{i:02}"), property);
        valid.insert(format!("field_{i:02}"), good);
        invalid.insert(format!("field_{i:02}"), bad);
    }
    let required: Vec<String> = (0..60)
        .step_by(3)
        .map(|i| format!("field_{i:02}"))
        .collect();
    let schema = json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    (schema, Value::Object(valid), Value::Object(invalid))
}

/// The general validator alone, compiled as tool schemas are: the floor.
fn raw_validator(schema: &Value) -> jsonschema::Validator {
    let draft = toolgauge::schema::draft_of(schema).unwrap();
    toolgauge::schema::options(draft).build(schema).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate");

    if let Some(workload) = workload::load() {
        let registry = Arc::new(
            Registry::new(
                vec![
                    ToolSource::BuiltinWithDefinition(inputs::def(
                        "echo",
                        workload.schemas["echo"].clone(),
                    )),
                    ToolSource::BuiltinWithDefinition(inputs::def(
                        "math",
                        workload.schemas["math"].clone(),
                    )),
                ],
                ToolEnv::default(),
            )
            .unwrap(),
        );
        let hot: Vec<ParsedCall> = workload.calls[..1000]
            .iter()
            .map(|c| call(&c.name, c.input.clone()))
            .collect();
        let raw: Vec<(&str, jsonschema::Validator)> = registry
            .definitions()
            .map(|d| (d.name.as_str(), raw_validator(&d.parameters)))
            .collect();
        let raw_of = |name: &str| &raw.iter().find(|(n, _)| *n == name).unwrap().1;
        let hot_args: Vec<(&jsonschema::Validator, &Value)> = workload.calls[..1000]
            .iter()
            .map(|c| (raw_of(&c.name), &c.input))
            .collect();
        group.throughput(Throughput::Elements(1000));
        group.bench_function("small_hot/raw_is_valid", |b| {
            b.iter(|| hot_args.iter().filter(|(v, args)| v.is_valid(args)).count())
        });
        // The decision alone (lookup by name, then valid or not): Ajv's h1.
        group.bench_function("small_hot/toolgauge_is_valid", |b| {
            b.iter(|| {
                hot.iter()
                    .filter(|c| match c {
                        ParsedCall::Ok(call) => registry
                            .lookup(&call.name)
                            .is_some_and(|tool| registry.is_valid(tool, call.arguments.as_value())),
                        ParsedCall::Malformed(_) => false,
                    })
                    .count()
            })
        });
        group.bench_function("small_hot/toolgauge", |b| {
            b.iter(|| {
                hot.iter()
                    .filter(|c| validate(&registry, c).is_ok())
                    .count()
            })
        });
        // The valid calls alone: our path against the floor on the same inputs.
        let valid: Vec<&ParsedCall> = hot
            .iter()
            .filter(|c| validate(&registry, c).is_ok())
            .collect();
        let valid_args: Vec<(&jsonschema::Validator, &Value)> = hot_args
            .iter()
            .copied()
            .filter(|(v, args)| v.is_valid(args))
            .collect();
        group.throughput(Throughput::Elements(valid.len() as u64));
        group.bench_function("small_hot_valid/raw_is_valid", |b| {
            b.iter(|| {
                valid_args
                    .iter()
                    .filter(|(v, args)| v.is_valid(args))
                    .count()
            })
        });
        group.bench_function("small_hot_valid/toolgauge", |b| {
            b.iter(|| {
                valid
                    .iter()
                    .filter(|c| validate(&registry, c).is_ok())
                    .count()
            })
        });
        let invalid: Vec<&ParsedCall> = hot
            .iter()
            .filter(|c| validate(&registry, c).is_err())
            .collect();
        group.throughput(Throughput::Elements(invalid.len() as u64));
        group.bench_function("small_hot/error_path", |b| {
            b.iter(|| {
                invalid
                    .iter()
                    .map(|c| validate(&registry, c).unwrap_err().message.len())
                    .sum::<usize>()
            })
        });
    }

    group.throughput(Throughput::Elements(1));
    for (size, (schema, valid, invalid)) in [("medium", inputs::search()), ("large", large())] {
        let registry = Registry::new(
            vec![ToolSource::Defined(inputs::def("tool", schema))],
            ToolEnv::default(),
        )
        .unwrap();
        let validator = raw_validator(
            &registry
                .definition(registry.lookup("tool").unwrap())
                .parameters,
        );
        assert!(validator.is_valid(&valid) && !validator.is_valid(&invalid));
        for (label, args) in [("valid", &valid), ("invalid", &invalid)] {
            let parsed = call("tool", args.clone());
            group.bench_with_input(
                BenchmarkId::new(format!("{size}/raw_is_valid"), label),
                args,
                |b, args| b.iter(|| validator.is_valid(black_box(args))),
            );
            group.bench_with_input(
                BenchmarkId::new(format!("{size}/toolgauge"), label),
                &parsed,
                |b, parsed| b.iter(|| validate(&registry, black_box(parsed)).is_ok()),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
