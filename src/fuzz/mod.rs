//! Validator fuzzing: valid instances generated from a tool's schema, and
//! invalid ones made by one mutation operator per keyword. A validator
//! must accept the first and reject the second; what it accepts of the
//! second survives, and the share it rejects is its kill rate.

pub mod external;
pub mod generate;
pub mod mutate;

use std::collections::BTreeMap;

use serde_json::Value;

pub use mutate::{Mutant, Mutation};

/// Counts for one mutation operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub generated: u64,
    pub killed: u64,
    pub survived: u64,
}

/// What fuzzing one tool's validator found.
#[derive(Debug, Clone, Default)]
pub struct ToolFuzz {
    pub valid: u64,
    /// Valid instances the validator rejected.
    pub false_rejects: u64,
    pub by_mutation: BTreeMap<Mutation, Counts>,
    /// The same per (keyword, path) site: where in the arguments a
    /// validator misses what (`/place/lat`, array items as `*`).
    pub by_site: BTreeMap<(Mutation, String), Counts>,
    /// The smallest surviving mutant per operator, as examples.
    pub survivors: BTreeMap<Mutation, Mutant>,
    /// Each survivor's case index: with the schema, `cases` and the seed,
    /// [`case`] makes it again.
    pub survivor_cases: BTreeMap<Mutation, u64>,
}

impl ToolFuzz {
    pub fn kill_rate(&self) -> f64 {
        let (killed, generated) = self
            .by_mutation
            .values()
            .fold((0, 0), |(k, g), c| (k + c.killed, g + c.generated));
        if generated == 0 {
            1.0
        } else {
            killed as f64 / generated as f64
        }
    }
}

/// Fuzz `accepts` (`Some(true)`: the instance is valid) with up to
/// `cases` valid and `cases` invalid instances of `schema`. Mutants that
/// the reference validator accepts are dropped: they are not really
/// invalid. `None` (the validator gave no verdict) stops the fuzzing: the
/// report holds what was measured before it.
pub fn fuzz_schema(
    schema: &Value,
    reference: &jsonschema::Validator,
    cases: usize,
    seed: u64,
    accepts: &mut dyn FnMut(&Value) -> Option<bool>,
) -> ToolFuzz {
    let mut report = ToolFuzz::default();
    let valid = generate::valid_instances(schema, reference, cases, seed);
    // Cases judged so far: the next case's index.
    let mut judged: u64 = 0;
    for instance in &valid {
        let Some(verdict) = accepts(instance) else {
            return report;
        };
        judged += 1;
        report.valid += 1;
        if !verdict {
            report.false_rejects += 1;
        }
    }
    // Every (keyword, path) site gets its turn, so that `cases` covers
    // every keyword at every place rather than the one with the most
    // distinct mutants. Mutants are built only when their turn comes.
    type Queue = std::vec::IntoIter<(usize, mutate::Site)>;
    let mut by_kind: BTreeMap<(Mutation, String), Queue> = BTreeMap::new();
    {
        let mut grouped: BTreeMap<(Mutation, String), Vec<(usize, mutate::Site)>> = BTreeMap::new();
        for (i, instance) in valid.iter().enumerate() {
            for site in mutate::sites(schema, instance) {
                let key = (site.mutation, site_path(&site.pointer));
                grouped.entry(key).or_default().push((i, site));
            }
        }
        by_kind.extend(
            grouped
                .into_iter()
                .map(|(key, sites)| (key, sites.into_iter())),
        );
    }
    // The same mutant from two instances (say, "not an object") counts once.
    let mut seen = std::collections::HashSet::new();
    let mut made = 0;
    while made < cases && !by_kind.is_empty() {
        by_kind.retain(|_, queue| queue.len() > 0);
        for (key, queue) in by_kind.iter_mut() {
            let Some((i, site)) = queue.next() else {
                continue;
            };
            let mutant = site.apply(&valid[i]);
            if reference.is_valid(&mutant.instance) || !seen.insert(mutant.instance.to_string()) {
                continue; // still valid (not a mutant at all), or already tried
            }
            let Some(verdict) = accepts(&mutant.instance) else {
                return report;
            };
            judged += 1;
            made += 1;
            let counts = report.by_mutation.entry(mutant.mutation).or_default();
            counts.generated += 1;
            let at_site = match report.by_site.get_mut(key) {
                Some(counts) => counts,
                None => report.by_site.entry(key.clone()).or_default(),
            };
            at_site.generated += 1;
            if verdict {
                counts.survived += 1;
                at_site.survived += 1;
                let size = mutant.instance.to_string().len();
                let smaller = report
                    .survivors
                    .get(&mutant.mutation)
                    .is_none_or(|kept| size < kept.instance.to_string().len());
                if smaller {
                    report.survivor_cases.insert(mutant.mutation, judged - 1);
                    report.survivors.insert(mutant.mutation, mutant);
                }
            } else {
                counts.killed += 1;
                at_site.killed += 1;
            }
            if made >= cases {
                break;
            }
        }
    }
    report
}

/// Where a mutant breaks the arguments, as reports group it: its JSON
/// pointer with array indices as `*` (`/tags/*`), `/` for the whole.
pub fn site_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "/".to_owned();
    }
    pointer
        .split('/')
        .map(|segment| {
            if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Case `index` of fuzzing `schema` with `cases` and `seed`: valid
/// instances first, then mutants, as [`fuzz_schema`] hands them out; or
/// how many cases there are, when `index` is beyond them.
pub fn case(
    schema: &Value,
    reference: &jsonschema::Validator,
    cases: usize,
    seed: u64,
    index: u64,
) -> Result<Value, u64> {
    let mut seen = 0;
    let mut found = None;
    fuzz_schema(schema, reference, cases, seed, &mut |v| {
        if seen == index {
            found = Some(v.clone());
            return None;
        }
        seen += 1;
        Some(true)
    });
    found.ok_or(seen)
}

impl ToolFuzz {
    /// Cases judged: valid instances and mutants.
    pub fn judged(&self) -> u64 {
        self.valid + self.by_mutation.values().map(|c| c.generated).sum::<u64>()
    }
}

/// [`fuzz_schema`] for validators that judge many instances at once
/// (a pipelined process): `judge` gets every instance in order and gives
/// the verdicts of a prefix of them (all, unless it stopped). The cases
/// do not depend on the verdicts, so they are made once to be judged, and
/// again to be counted with the verdicts.
pub fn fuzz_schema_batched(
    schema: &Value,
    reference: &jsonschema::Validator,
    cases: usize,
    seed: u64,
    judge: &mut dyn FnMut(&[Value]) -> Vec<bool>,
) -> ToolFuzz {
    let mut instances = Vec::new();
    fuzz_schema(schema, reference, cases, seed, &mut |v| {
        instances.push(v.clone());
        Some(true)
    });
    let mut verdicts = judge(&instances).into_iter();
    fuzz_schema(schema, reference, cases, seed, &mut |_| verdicts.next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let validator = jsonschema::validator_for(&schema).unwrap();
        // Checks everything but what is inside "place".
        let mut shallow = schema.clone();
        shallow["properties"]["place"] = json!({"type": "object"});
        let shallow = jsonschema::validator_for(&shallow).unwrap();
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
    fn batched_verdicts_count_as_one_at_a_time_and_a_prefix_stops_early() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let weak = |v: &Value| v.get("city").is_some();
        let one_by_one = fuzz_schema(&schema, &validator, 80, 3, &mut |v| Some(weak(v)));
        let batched = fuzz_schema_batched(&schema, &validator, 80, 3, &mut |all| {
            all.iter().map(weak).collect()
        });
        assert_eq!(batched.valid, one_by_one.valid);
        assert_eq!(batched.by_mutation, one_by_one.by_mutation);
        assert_eq!(batched.survivors.len(), one_by_one.survivors.len());
        let partial = fuzz_schema_batched(&schema, &validator, 80, 3, &mut |all| {
            all.iter().take(100).map(weak).collect()
        });
        let judged = partial.valid
            + partial
                .by_mutation
                .values()
                .map(|c| c.generated)
                .sum::<u64>();
        assert_eq!(judged, 100);
        // Every survivor is made again from its case index.
        assert!(!one_by_one.survivor_cases.is_empty());
        for (mutation, index) in &one_by_one.survivor_cases {
            let again = case(&schema, &validator, 80, 3, *index).unwrap();
            assert_eq!(again, one_by_one.survivors[mutation].instance);
        }
    }

    #[test]
    fn generated_instances_are_valid_and_follow_the_seed() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let first = generate::valid_instances(&schema, &validator, 50, 3);
        assert_eq!(first.len(), 50);
        assert!(first.iter().all(|v| validator.is_valid(v)));
        assert_eq!(first, generate::valid_instances(&schema, &validator, 50, 3));
        assert_ne!(first, generate::valid_instances(&schema, &validator, 50, 4));
    }

    #[test]
    fn the_builtin_validator_kills_every_mutant() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
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
        let validator = jsonschema::validator_for(&schema).unwrap();
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
        let asserting = crate::tool::schema_options(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        let report = fuzz_schema(&schema, &asserting, 50, 1, &mut |v| {
            Some(asserting.is_valid(v))
        });
        assert_eq!(report.false_rejects, 0);
        let format = &report.by_mutation[&Mutation::Format];
        assert!(format.generated >= 2 && format.killed == format.generated);
        // An annotation-only validator accepts them, so they are not honest mutants.
        let annotating = jsonschema::validator_for(&schema).unwrap();
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
        let validator = jsonschema::validator_for(&schema).unwrap();
        let report = fuzz_schema(&schema, &validator, 300, 1, &mut |v| Some(weak(&schema, v)));
        assert_eq!(report.false_rejects, 0);
        assert!(report.kill_rate() < 0.6, "{}", report.kill_rate());
        assert_eq!(report.by_mutation[&Mutation::NotAnObject].survived, 0);
        // Top-level required is checked; the nested one is a hole, with its pointer.
        assert_eq!(report.survivors[&Mutation::Required].pointer, "/place/lat");
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
}
