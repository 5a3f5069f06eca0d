use super::*;
use crate::schema::{Compiled, generate};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2, "maxLength": 20},
            "units": {"enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "step": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 3, "uniqueItems": true},
            "place": {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}}, "required": ["lat"], "additionalProperties": false}
        },
        "required": ["city", "days", "place"],
        "additionalProperties": false
    })
}

#[test]
fn a_validator_that_ignores_nested_objects_is_read_off_the_paths() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    // Checks everything but what is inside "place".
    let mut shallow = schema.clone();
    shallow["properties"]["place"] = json!({"type": "object"});
    let shallow = Compiled::new(&shallow).unwrap();
    let report = fuzz_schema(&schema, &validator, 300, 1, &mut |v| {
        Some(shallow.is_valid(v))
    });
    let survived: Vec<&String> = report
        .by_site
        .iter()
        .filter(|(_, c)| c.survived > 0)
        .map(|((_, path), _)| path)
        .collect();
    assert!(!survived.is_empty());
    assert!(
        survived
            .iter()
            .all(|p| *p == "/place" || p.starts_with("/place/")),
        "{survived:?}"
    );
    // Every site had its share: the top-level ones were all tried, and killed.
    let city = &report.by_site[&(Mutation::Type, "/city".to_owned())];
    assert!(city.generated > 0 && city.survived == 0);
    assert_eq!(site_path("/tags/2"), "/tags/*");
    assert_eq!(site_path(""), "/");
}

#[test]
fn cases_come_a_block_at_a_time_and_their_indices_hold_across_blocks() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    let weak = |v: &Value| v.get("city").is_some();
    let cases = 2 * BLOCK + 100;
    let blocks: Vec<Cases> = CaseBlocks::new(&schema, &validator, cases, 5, false).collect();
    assert_eq!(blocks.len(), 3);
    let mut offset = 0;
    for block in &blocks {
        // No block holds more than BLOCK valid instances and as many mutants.
        let valid = block
            .kinds
            .iter()
            .filter(|k| **k == CaseKind::Valid)
            .count();
        assert!(valid <= BLOCK && block.len() - valid <= BLOCK);
        assert_eq!(block.offset, offset);
        offset += block.len() as u64;
    }
    // Judged block by block, the report is the one of all cases at once,
    // and every survivor's index names its instance among all cases.
    let all = Cases::generate(&schema, &validator, cases, 5);
    assert_eq!(all.len() as u64, offset);
    let verdicts: Vec<bool> = all.instances.iter().map(weak).collect();
    let whole = all.tally(&verdicts);
    let by_block = fuzz_schema(&schema, &validator, cases, 5, &mut |v| Some(weak(v)));
    assert_eq!(by_block.valid, 2 * BLOCK as u64 + 100);
    assert_eq!(whole.by_mutation, by_block.by_mutation);
    assert_eq!(whole.by_site, by_block.by_site);
    assert_eq!(whole.survivors, by_block.survivors);
    assert!(
        by_block
            .survivors
            .values()
            .any(|e| e.case >= blocks[0].len() as u64)
    );
    for example in by_block.survivors.values() {
        assert_eq!(all.instances[example.case as usize], example.instance);
    }
}

#[test]
fn a_prefix_of_verdicts_counts_as_far_as_it_goes_and_survivors_name_their_case() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    let weak = |v: &Value| v.get("city").is_some();
    let cases = Cases::generate(&schema, &validator, 80, 3);
    let verdicts: Vec<bool> = cases.instances.iter().map(weak).collect();
    let whole = cases.tally(&verdicts);
    let one_by_one = fuzz_schema(&schema, &validator, 80, 3, &mut |v| Some(weak(v)));
    assert_eq!(whole.by_mutation, one_by_one.by_mutation);
    assert_eq!(whole.judged(), cases.len() as u64);
    assert_eq!(cases.tally(&verdicts[..100]).judged(), 100);
    // Every survivor is made again from its case index.
    assert!(!whole.survivors.is_empty());
    let again = Cases::generate(&schema, &validator, 80, 3);
    for example in whole.survivors.values() {
        assert_eq!(again.instances[example.case as usize], example.instance);
    }
}

#[test]
fn generated_instances_are_valid_and_follow_the_seed() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    let first = generate::valid_instances(&schema, &validator, 50, 3);
    assert_eq!(first.len(), 50);
    assert!(first.iter().all(|v| validator.is_valid(v)));
    assert_eq!(first, generate::valid_instances(&schema, &validator, 50, 3));
    assert_ne!(first, generate::valid_instances(&schema, &validator, 50, 4));
}

#[test]
fn the_builtin_validator_kills_every_mutant() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    let report = fuzz_schema(&schema, &validator, 300, 1, &mut |v| {
        Some(validator.is_valid(v))
    });
    assert_eq!(report.false_rejects, 0);
    assert_eq!(report.kill_rate(), 1.0);
    for mutation in [
        Mutation::Type,
        Mutation::Required,
        Mutation::Enum,
        Mutation::Minimum,
        Mutation::Maximum,
        Mutation::MultipleOf,
        Mutation::MinLength,
        Mutation::MaxLength,
        Mutation::Pattern,
        Mutation::MaxItems,
        Mutation::UniqueItems,
        Mutation::AdditionalProperties,
        Mutation::NotAnObject,
        Mutation::ExclusiveMinimum,
    ] {
        assert!(
            report
                .by_mutation
                .get(&mutation)
                .is_some_and(|c| c.generated > 0),
            "no {mutation:?} mutant"
        );
    }
}

#[test]
fn pattern_digits_are_ascii_so_no_draw_is_wasted() {
    let schema = json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^ORD-\\d{6}$"}}, "required": ["id"]});
    let validator = Compiled::new(&schema).unwrap();
    let instances = generate::valid_instances(&schema, &validator, 200, 1);
    assert_eq!(instances.len(), 200);
    assert!(
        instances
            .iter()
            .all(|v| v["id"].as_str().unwrap().is_ascii())
    );
}

#[test]
fn format_mutants_count_only_where_format_is_asserted() {
    let schema = json!({
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "host": {"type": "string", "format": "ipv4"}
        },
        "required": ["day", "host"]
    });
    let asserting = Compiled::new(&schema).unwrap();
    let report = fuzz_schema(&schema, &asserting, 50, 1, &mut |v| {
        Some(asserting.is_valid(v))
    });
    assert_eq!(report.false_rejects, 0);
    let format = &report.by_mutation[&Mutation::Format];
    assert!(format.generated >= 2 && format.killed == format.generated);
    // An annotation-only validator accepts them, so they are not honest mutants.
    let annotating = Compiled::with_formats_annotated(&schema);
    let report = fuzz_schema(&schema, &annotating, 50, 1, &mut |v| {
        Some(annotating.is_valid(v))
    });
    assert!(!report.by_mutation.contains_key(&Mutation::Format));
}

/// Like many hand-written validators: top-level required and types only.
fn weak(schema: &Value, instance: &Value) -> bool {
    let Some(object) = instance.as_object() else {
        return false;
    };
    let required = schema["required"].as_array().unwrap();
    if !required
        .iter()
        .all(|r| object.contains_key(r.as_str().unwrap()))
    {
        return false;
    }
    object.iter().all(
        |(key, value)| match schema["properties"][key]["type"].as_str() {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("array") => value.is_array(),
            Some("object") => value.is_object(),
            _ => true,
        },
    )
}

#[test]
fn the_fuzzer_finds_the_holes_of_a_weak_validator() {
    let schema = schema();
    let validator = Compiled::new(&schema).unwrap();
    let report = fuzz_schema(&schema, &validator, 300, 1, &mut |v| Some(weak(&schema, v)));
    // It reads an integer written as 5.0 as a wrong type.
    assert!(report.false_rejects > 0);
    let rejected = &report.false_reject.as_ref().unwrap().instance;
    assert!(rejected["days"].is_f64(), "{rejected}");
    assert!(report.kill_rate() < 0.6, "{}", report.kill_rate());
    assert_eq!(report.by_mutation[&Mutation::NotAnObject].survived, 0);
    // Top-level required is checked; the nested one is a hole, with its pointer.
    assert_eq!(
        report.survivors[&Mutation::Required].pointer.as_str(),
        "/place/lat"
    );
    for hole in [
        Mutation::Enum,
        Mutation::Minimum,
        Mutation::Maximum,
        Mutation::AdditionalProperties,
        Mutation::Pattern,
    ] {
        assert!(
            report.by_mutation[&hole].survived > 0,
            "{hole:?} should survive a weak validator"
        );
        assert!(report.survivors.contains_key(&hole));
    }
}

/// Faults of validators in the wild, each caught by name below.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Counts string lengths in UTF-16 units (JavaScript's `length`).
    Utf16Lengths,
    /// Checks the top level only.
    IgnoresNestedObjects,
    /// Takes any number for an integer.
    FloatIntegers,
    /// Takes any Unicode digit for `\d` (Python's `re`).
    UnicodeDigits,
}

fn faults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2, "maxLength": 8},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "order": {"type": "string", "pattern": "^ORD-\\d{4}$"},
            "place": {
                "type": "object",
                "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}},
                "required": ["lat"],
                "additionalProperties": false
            }
        },
        "required": ["city", "days", "order", "place"],
        "additionalProperties": false
    })
}

/// The built-in validator with `fault` added: the schema or the instance
/// changed the way the fault sees them.
fn faulty(schema: &Value, fault: Fault) -> impl Fn(&Value) -> bool {
    let mut seen_schema = schema.clone();
    match fault {
        Fault::IgnoresNestedObjects => {
            seen_schema["properties"]["place"] = json!({"type": "object"})
        }
        Fault::FloatIntegers => seen_schema["properties"]["days"]["type"] = json!("number"),
        Fault::Utf16Lengths | Fault::UnicodeDigits => {}
    }
    let validator = Compiled::new(&seen_schema).unwrap();
    move |instance: &Value| {
        let mut seen = instance.clone();
        map_strings(&mut seen, &|text: &str| match fault {
            // Each unit of a surrogate pair counts as a character.
            Fault::Utf16Lengths => text
                .chars()
                .flat_map(|c| {
                    if c.len_utf16() == 2 {
                        vec!['\u{E000}', '\u{E000}']
                    } else {
                        vec![c]
                    }
                })
                .collect(),
            Fault::UnicodeDigits => text
                .chars()
                .map(|c| match c as u32 {
                    0x0660..=0x0669 => char::from(b'0' + (c as u32 - 0x0660) as u8),
                    _ => c,
                })
                .collect(),
            _ => text.to_owned(),
        });
        validator.is_valid(&seen)
    }
}

fn map_strings(value: &mut Value, f: &dyn Fn(&str) -> String) {
    match value {
        Value::String(text) => *text = f(text),
        Value::Array(items) => items.iter_mut().for_each(|v| map_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| map_strings(v, f)),
        _ => {}
    }
}

/// Fuzzing `fault` alone, and against the built-in validator: its report,
/// and the disagreements, minimised.
fn fuzz_fault(fault: Fault) -> (ToolFuzz, Vec<differential::Disagreement>) {
    let schema = faults_schema();
    let reference = Compiled::new(&schema).unwrap();
    let faulty = faulty(&schema, fault);
    let cases = Cases::generate(&schema, &reference, 300, 1);
    let builtin: Vec<bool> = cases
        .instances
        .iter()
        .map(|v| reference.is_valid(v))
        .collect();
    let theirs: Vec<bool> = cases.instances.iter().map(&faulty).collect();
    assert_eq!(cases.tally(&builtin).kill_rate(), 1.0);
    let mut found = differential::disagreements(&cases, &[builtin, theirs.clone()]);
    for disagreement in &mut found {
        let before = disagreement.example.instance.to_string().len();
        disagreement.minimise(&reference, 300, &mut |v| {
            Some(vec![reference.is_valid(v), faulty(v)])
        });
        let after = &disagreement.minimised;
        assert!(after.to_string().len() <= before);
        assert_eq!(
            vec![reference.is_valid(after), faulty(after)],
            disagreement.verdicts,
            "{fault:?}: the minimised instance {after} no longer disagrees"
        );
    }
    (cases.tally(&theirs), found)
}

fn disagreement_on(found: &[differential::Disagreement], keyword: &str) -> Value {
    found
        .iter()
        .find(|d| d.keyword() == keyword)
        .unwrap_or_else(|| panic!("no {keyword} disagreement in {found:#?}"))
        .minimised
        .clone()
}

#[test]
fn a_validator_counting_utf16_units_is_caught_on_min_length_and_valid_text() {
    let (report, found) = fuzz_fault(Fault::Utf16Lengths);
    // One character short, in characters beyond the BMP, looks long enough.
    let survivor = &report.survivors[&Mutation::MinLength].instance;
    assert!(
        survivor["city"]
            .as_str()
            .unwrap()
            .chars()
            .any(|c| c.len_utf16() == 2)
    );
    // A valid city of 8 code points with an emoji looks too long.
    assert!(report.false_rejects > 0);
    let minimised = disagreement_on(&found, "min_length");
    assert_eq!(minimised["city"].as_str().unwrap().chars().count(), 1);
    disagreement_on(&found, "valid");
}

#[test]
fn a_validator_ignoring_nested_objects_is_caught_at_their_paths() {
    let (report, found) = fuzz_fault(Fault::IgnoresNestedObjects);
    assert_eq!(report.false_rejects, 0);
    assert!(report.survivors.contains_key(&Mutation::Required));
    let holes: Vec<&str> = report
        .by_site
        .iter()
        .filter(|(_, c)| c.survived > 0)
        .map(|((_, path), _)| path.as_str())
        .collect();
    assert!(holes.iter().all(|p| p.starts_with("/place")), "{holes:?}");
    assert!(holes.contains(&"/place/lat"), "{holes:?}");
    assert!(found.iter().all(|d| d.path.starts_with("/place")));
    // A nested required property left out: the smallest such instance has
    // an empty place.
    assert_eq!(disagreement_on(&found, "required")["place"], json!({}));
}

#[test]
fn a_validator_taking_floats_for_integers_is_caught_on_type() {
    let (report, found) = fuzz_fault(Fault::FloatIntegers);
    assert_eq!(report.false_rejects, 0);
    let survivor = &report.survivors[&Mutation::Type];
    assert_eq!(survivor.pointer.as_str(), "/days");
    assert_eq!(survivor.instance["days"].as_f64().unwrap().fract(), 0.5);
    let minimised = disagreement_on(&found, "type");
    assert_eq!(minimised["days"].as_f64().unwrap().fract(), 0.5);
}

#[test]
fn a_validator_taking_unicode_digits_for_backslash_d_is_caught_on_pattern() {
    let (report, found) = fuzz_fault(Fault::UnicodeDigits);
    assert_eq!(report.false_rejects, 0);
    let survivor = &report.survivors[&Mutation::Pattern];
    assert_eq!(survivor.pointer.as_str(), "/order");
    let order = survivor.instance["order"].as_str().unwrap();
    assert!(order.starts_with("ORD-") && !order.is_ascii(), "{order}");
    let minimised = disagreement_on(&found, "pattern");
    assert!(!minimised["order"].as_str().unwrap().is_ascii());
}

#[test]
fn validators_that_agree_have_no_disagreements() {
    let schema = faults_schema();
    let reference = Compiled::new(&schema).unwrap();
    let cases = Cases::generate(&schema, &reference, 100, 2);
    let verdicts: Vec<bool> = cases
        .instances
        .iter()
        .map(|v| reference.is_valid(v))
        .collect();
    assert!(differential::disagreements(&cases, &[verdicts.clone(), verdicts]).is_empty());
}

#[test]
fn valid_instances_are_varied() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "count": {"type": "integer", "minimum": 0, "maximum": 100},
            "when": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"}
        },
        "required": ["name", "count", "when", "tags", "meta"]
    });
    let validator = Compiled::new(&schema).unwrap();
    let instances = generate::valid_instances(&schema, &validator, 400, 1);
    assert_eq!(instances.len(), 400);
    let any = |f: &dyn Fn(&Value) -> bool| instances.iter().any(f);
    let name = |v: &Value| v["name"].as_str().unwrap().to_owned();
    assert!(
        any(&|v| name(v).chars().any(|c| c.len_utf16() == 2)),
        "astral characters"
    );
    assert!(any(&|v| name(v).contains('\u{301}')), "combining marks");
    assert!(any(&|v| name(v).chars().count() == 12), "exactly maxLength");
    assert!(any(&|v| name(v).chars().count() == 1), "exactly minLength");
    assert!(
        any(&|v| v["count"].is_f64()),
        "an integer written as a float"
    );
    assert!(any(&|v| v["count"] == json!(100)), "exactly the maximum");
    assert!(any(&|v| v["count"] == json!(0)), "exactly the minimum");
    assert!(any(&|v| v["tags"] == json!([])), "an empty array");
    assert!(any(&|v| v["meta"] == json!({})), "an empty object");
    let whens: std::collections::HashSet<&str> = instances
        .iter()
        .map(|v| v["when"].as_str().unwrap())
        .collect();
    assert!(whens.len() >= 3, "{whens:?}");
    let depth = |v: &Value| -> usize {
        fn depth(v: &Value) -> usize {
            match v {
                Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
                Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
                _ => 0,
            }
        }
        depth(v)
    };
    assert!(any(&|v| depth(v) >= 5), "nesting five deep");
}

/// FNV-1a: a hash whose value no Rust release changes.
fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for byte in bytes {
        *hash ^= u64::from(*byte);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

/// The first 1,000 valid instances and the first 1,000 mutants (what
/// each breaks, and where) of every built-in tool, at a seed, hashed.
fn first_cases_hash(seed: u64) -> (u64, usize) {
    let mut hash = 0xcbf2_9ce4_8422_2325;
    let mut count = 0;
    for name in crate::tool::BUILTIN_NAMES {
        let def = crate::tool::builtin_definition(name).expect("a built-in tool");
        let reference = Compiled::new(&def.parameters).unwrap();
        let block = CaseBlocks::new(&def.parameters, &reference, 1_000_000, seed, false)
            .next()
            .expect("a first block");
        let (mut valid, mut mutants) = (0, 0);
        for (instance, kind) in block.instances.iter().zip(&block.kinds) {
            let wanted = match kind {
                CaseKind::Valid => &mut valid,
                CaseKind::Mutant { .. } => &mut mutants,
            };
            if *wanted == 1000 {
                continue;
            }
            *wanted += 1;
            count += 1;
            fnv1a(&mut hash, &serde_json::to_vec(instance).unwrap());
            if let CaseKind::Mutant { mutation, pointer } = kind {
                fnv1a(&mut hash, mutation.as_str().as_bytes());
                fnv1a(&mut hash, pointer.as_str().as_bytes());
            }
            fnv1a(&mut hash, b"\n");
        }
    }
    (hash, count)
}

/// Making cases faster must not make other cases: a case index names
/// one instance for good (`--replay`, and every report's examples).
#[test]
fn the_same_seed_gives_the_same_first_cases_of_every_builtin_tool() {
    let (hash, count) = first_cases_hash(0);
    // Up to 1,000 of each of 12 tools: some tools have fewer distinct
    // mutants in a block.
    assert_eq!(count, 23_004, "seed 0: {count} cases");
    assert_eq!(hash, 0xe8d6_bd3a_38a5_513d, "seed 0: {hash:#018x}");
    let (hash, _) = first_cases_hash(7);
    assert_eq!(hash, 0x3dc3_5060_4b4a_8c91, "seed 7: {hash:#018x}");
}
