//! A tool's cases: valid instances and mutants fixed by schema, count and
//! seed, made and judged in blocks, and their counts.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::Value;

use super::Mutation;
use crate::pointer::Pointer;
use crate::schema::mutate::{self, site_path};
use crate::schema::{Compiled, generate};

/// Counts for one mutation operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub generated: u64,
    pub killed: u64,
    pub survived: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.generated += other.generated;
        self.killed += other.killed;
        self.survived += other.survived;
    }
}

/// One instance a report names: the case index that makes it again (with
/// the schema, `cases` and the seed), where it was broken, and itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub case: u64,
    /// Where the broken value is; the root for a valid instance.
    pub pointer: Pointer,
    pub instance: Value,
}

/// Whether `instance` is shorter as JSON text than the example kept, or
/// none is: reports show the smallest, the earlier of two the same size.
pub(crate) fn smaller_than_kept(instance: &Value, kept: Option<&Example>) -> bool {
    kept.is_none_or(|kept| instance.to_string().len() < kept.instance.to_string().len())
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
    /// The smallest surviving mutant per operator.
    pub survivors: BTreeMap<Mutation, Example>,
    /// The smallest valid instance the validator rejected.
    pub false_reject: Option<Example>,
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

    /// Cases judged: valid instances and mutants.
    pub fn judged(&self) -> u64 {
        self.valid + self.by_mutation.values().map(|c| c.generated).sum::<u64>()
    }

    /// Add what a later block of the same tool's cases found.
    pub fn absorb(&mut self, later: ToolFuzz) {
        self.valid += later.valid;
        self.false_rejects += later.false_rejects;
        for (mutation, counts) in later.by_mutation {
            self.by_mutation.entry(mutation).or_default().add(counts);
        }
        for (site, counts) in later.by_site {
            self.by_site.entry(site).or_default().add(counts);
        }
        for (mutation, example) in later.survivors {
            if smaller_than_kept(&example.instance, self.survivors.get(&mutation)) {
                self.survivors.insert(mutation, example);
            }
        }
        if let Some(example) = later.false_reject
            && smaller_than_kept(&example.instance, self.false_reject.as_ref())
        {
            self.false_reject = Some(example);
        }
    }

    /// Whether any case was judged at all.
    pub fn measured(&self) -> bool {
        self.judged() > 0
    }
}

/// What a case is meant to be.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseKind {
    Valid,
    /// Breaks `mutation`'s keyword at `pointer`, and nothing else.
    Mutant {
        mutation: Mutation,
        pointer: Pointer,
    },
}

/// Valid instances per block of cases: the most a run holds at once.
pub const BLOCK: usize = 1024;

/// One block of the cases of fuzzing one schema, in the order they are
/// judged: its valid instances, then their mutants. Blocks depend on the
/// schema, the reference validator, `cases` and the seed only, never on
/// verdicts, so a case index names one instance for good.
#[derive(Debug, Clone, Default)]
pub struct Cases {
    /// The index of the block's first case among the tool's cases.
    pub offset: u64,
    pub instances: Vec<Value>,
    pub kinds: Vec<CaseKind>,
}

/// A block's mutation sites by (operator, site path) number, kept from
/// block to block so that each group's vector grows once in a run.
#[derive(Default)]
struct SiteGroups(Vec<Vec<(usize, mutate::Site)>>);

/// The blocks of cases of one schema: up to `cases` valid instances and
/// `cases` mutants in all, [`BLOCK`] valid instances (and as many mutants
/// of them) at a time, so that memory stays flat however many cases.
pub struct CaseBlocks<'a> {
    plan: mutate::Plan,
    groups: SiteGroups,
    reference: &'a Compiled,
    valid: generate::ValidInstances,
    left: usize,
    offset: u64,
    objects_only: bool,
}

impl<'a> CaseBlocks<'a> {
    /// `objects_only`: without the cases that are not objects (a tool
    /// server's `tools/call` carries arguments as an object, so they
    /// cannot be sent); indices count only the cases kept.
    pub fn new(
        schema: &'a Value,
        reference: &'a Compiled,
        cases: usize,
        seed: u64,
        objects_only: bool,
    ) -> CaseBlocks<'a> {
        CaseBlocks {
            plan: mutate::Plan::new(schema),
            groups: SiteGroups::default(),
            reference,
            valid: generate::ValidInstances::new(schema, seed),
            left: cases,
            offset: 0,
            objects_only,
        }
    }
}

impl Iterator for CaseBlocks<'_> {
    type Item = Cases;

    fn next(&mut self) -> Option<Cases> {
        let wanted = self.left.min(BLOCK);
        if wanted == 0 {
            return None;
        }
        let valid = self.valid.draw(self.reference, wanted);
        // A generator that came up short has no more to give.
        self.left = if valid.len() < wanted {
            0
        } else {
            self.left - wanted
        };
        let mut block = Cases::of(&self.plan, self.reference, valid, wanted, &mut self.groups);
        if self.objects_only {
            block = block.objects_only();
        }
        block.offset = self.offset;
        self.offset += block.len() as u64;
        (!block.is_empty()).then_some(block)
    }
}

impl Cases {
    /// Every case of `schema` in one value (see [`CaseBlocks`] for a run
    /// that should not hold them all).
    pub fn generate(schema: &Value, reference: &Compiled, cases: usize, seed: u64) -> Cases {
        let mut all = Cases::default();
        for mut block in CaseBlocks::new(schema, reference, cases, seed, false) {
            all.instances.append(&mut block.instances);
            all.kinds.append(&mut block.kinds);
        }
        all
    }

    /// `valid` and up to `mutants` mutants of them. Mutants that the
    /// reference validator accepts are dropped: they are not really
    /// invalid.
    fn of(
        plan: &mutate::Plan,
        reference: &Compiled,
        valid: Vec<Value>,
        mutants: usize,
        groups: &mut SiteGroups,
    ) -> Cases {
        let mut out = Cases {
            offset: 0,
            kinds: vec![CaseKind::Valid; valid.len()],
            instances: Vec::with_capacity(valid.len() * 2),
        };
        // Every (keyword, path) site gets its turn, so that `cases` covers
        // every keyword at every place rather than the one with the most
        // distinct mutants. Mutants are built only when their turn comes.
        // Grouped by (operator, site path) numbers, then put in the order
        // of (operator, site path as written): one table, no text keys.
        let paths = plan.site_paths();
        let groups = &mut groups.0;
        for (i, instance) in valid.iter().enumerate() {
            plan.each_site(instance, &mut |site| {
                let slot = site.mutation as usize * paths + site.path.0 as usize;
                if groups.len() <= slot {
                    groups.resize_with(slot + 1, Vec::new);
                }
                groups[slot].push((i, site));
            });
        }
        let key = |slot: usize| {
            let first = &groups[slot][0].1;
            (first.mutation, plan.site_path(first.path))
        };
        let mut order: Vec<usize> = (0..groups.len())
            .filter(|slot| !groups[*slot].is_empty())
            .collect();
        order.sort_unstable_by(|a, b| key(*a).cmp(&key(*b)));
        // Each group's next site.
        let mut next = vec![0; groups.len()];
        // The same mutant from two instances (say, "not an object") counts
        // once in a block; mutants are told apart by a hash of their value.
        let mut seen = HashSet::with_hasher(foldhash::fast::FixedState::with_seed(0));
        let mut made = 0;
        while made < mutants && !order.is_empty() {
            order.retain(|slot| next[*slot] < groups[*slot].len());
            for &slot in &order {
                let Some((i, site)) = groups[slot].get(next[slot]) else {
                    continue;
                };
                next[slot] += 1;
                let mutant = site.apply(&valid[*i]);
                if reference.full_is_valid(&mutant.instance)
                    || !seen.insert(fingerprint(&mutant.instance))
                {
                    continue; // still valid (not a mutant at all), or already tried
                }
                out.kinds.push(CaseKind::Mutant {
                    mutation: mutant.mutation,
                    pointer: mutant.pointer,
                });
                out.instances.push(mutant.instance);
                made += 1;
                if made >= mutants {
                    break;
                }
            }
        }
        groups.iter_mut().for_each(Vec::clear);
        let mut instances = valid;
        instances.append(&mut out.instances);
        out.instances = instances;
        out
    }

    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Without the cases that are not objects.
    fn objects_only(mut self) -> Cases {
        let mut kinds = std::mem::take(&mut self.kinds).into_iter();
        let mut kept_kinds = Vec::with_capacity(kinds.len());
        self.instances.retain(|instance| {
            let kind = kinds.next().expect("one kind per instance");
            let keep = instance.is_object();
            if keep {
                kept_kinds.push(kind);
            }
            keep
        });
        self.kinds = kept_kinds;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// What `verdicts` (`true`: the instance is valid) on these cases, in
    /// order, say of the validator; a shorter list counts its prefix.
    pub fn tally(&self, verdicts: &[bool]) -> ToolFuzz {
        let mut report = ToolFuzz::default();
        for (index, ((instance, kind), &accepted)) in self
            .instances
            .iter()
            .zip(&self.kinds)
            .zip(verdicts)
            .enumerate()
        {
            let case = self.offset + index as u64;
            let (mutation, pointer) = match kind {
                CaseKind::Valid => {
                    report.valid += 1;
                    if !accepted {
                        report.false_rejects += 1;
                        if smaller_than_kept(instance, report.false_reject.as_ref()) {
                            report.false_reject = Some(Example {
                                case,
                                pointer: Pointer::root(),
                                instance: instance.clone(),
                            });
                        }
                    }
                    continue;
                }
                CaseKind::Mutant { mutation, pointer } => (*mutation, pointer),
            };
            let counts = report.by_mutation.entry(mutation).or_default();
            let at_site = report
                .by_site
                .entry((mutation, site_path(pointer.as_str())))
                .or_default();
            counts.generated += 1;
            at_site.generated += 1;
            if accepted {
                counts.survived += 1;
                at_site.survived += 1;
                if smaller_than_kept(instance, report.survivors.get(&mutation)) {
                    report.survivors.insert(
                        mutation,
                        Example {
                            case,
                            pointer: pointer.clone(),
                            instance: instance.clone(),
                        },
                    );
                }
            } else {
                counts.killed += 1;
                at_site.killed += 1;
            }
        }
        report
    }
}

/// Fuzz `accepts` (`Some(true)`: the instance is valid) with up to
/// `cases` valid and `cases` invalid instances of `schema`, one at a
/// time. `None` (the validator gave no verdict) stops the fuzzing: the
/// report holds what was measured before it.
pub fn fuzz_schema(
    schema: &Value,
    reference: &Compiled,
    cases: usize,
    seed: u64,
    accepts: &mut dyn FnMut(&Value) -> Option<bool>,
) -> ToolFuzz {
    let mut report = ToolFuzz::default();
    for block in CaseBlocks::new(schema, reference, cases, seed, false) {
        let verdicts: Vec<bool> = block.instances.iter().map_while(&mut *accepts).collect();
        report.absorb(block.tally(&verdicts));
        if verdicts.len() < block.len() {
            break;
        }
    }
    report
}

/// A hash of `value` that tells JSON values apart (integers from floats
/// too: `5` and `5.0` are different cases), by foldhash with a fixed
/// seed: the same everywhere, and a fifth of SipHash's cost.
fn fingerprint(value: &Value) -> u64 {
    fn feed(value: &Value, hasher: &mut impl Hasher) {
        match value {
            Value::Null => 0u8.hash(hasher),
            Value::Bool(b) => (1u8, b).hash(hasher),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => (2u8, i).hash(hasher),
                (None, Some(u)) => (3u8, u).hash(hasher),
                _ => (4u8, n.as_f64().unwrap_or_default().to_bits()).hash(hasher),
            },
            Value::String(text) => (5u8, text).hash(hasher),
            Value::Array(items) => {
                (6u8, items.len()).hash(hasher);
                items.iter().for_each(|v| feed(v, hasher));
            }
            Value::Object(map) => {
                (7u8, map.len()).hash(hasher);
                for (key, v) in map {
                    key.hash(hasher);
                    feed(v, hasher);
                }
            }
        }
    }
    let mut hasher = foldhash::quality::FixedState::with_seed(0).build_hasher();
    feed(value, &mut hasher);
    hasher.finish()
}
