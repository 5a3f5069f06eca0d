//! The order of a suite's scenarios when some run `after` others: every
//! prerequisite before the scenarios that name it, scenarios of the same
//! depth together (so that independent chains run side by side), and
//! otherwise the order the files came in.

use std::path::PathBuf;

use super::Scenario;

/// Why a suite's `after`s cannot be run: the file at fault, and what.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct OrderError {
    pub path: PathBuf,
    pub message: String,
}

/// `scenarios` ordered so that each comes after every scenario its
/// `after` names; an `after` naming a scenario not in the suite, or a
/// loop, is refused.
pub fn prerequisites_first(scenarios: Vec<Scenario>) -> Result<Vec<Scenario>, OrderError> {
    if scenarios.iter().all(|s| s.after.is_empty()) {
        return Ok(scenarios);
    }
    let after = prerequisites(&scenarios).map_err(|(i, message)| OrderError {
        path: scenarios[i].path.clone(),
        message,
    })?;
    let mut depth: Vec<Option<usize>> = vec![None; scenarios.len()];
    for i in 0..scenarios.len() {
        depth_of(i, &after, &mut depth, &mut Vec::new()).map_err(|chain| OrderError {
            path: scenarios[i].path.clone(),
            message: format!(
                "\"after\" makes a loop: {}",
                chain
                    .iter()
                    .map(|&k| scenarios[k].name.as_str())
                    .collect::<Vec<_>>()
                    .join(" -> ")
            ),
        })?;
    }
    let mut indexed: Vec<(usize, Scenario)> = scenarios
        .into_iter()
        .enumerate()
        .map(|(i, s)| (depth[i].expect("every depth is known"), s))
        .collect();
    // Stable: the file order within one depth.
    indexed.sort_by_key(|(depth, _)| *depth);
    Ok(indexed.into_iter().map(|(_, s)| s).collect())
}

/// Each scenario's prerequisites, as indices into `scenarios`; the first
/// scenario whose `after` names one not there, and what to say.
pub fn prerequisites(scenarios: &[Scenario]) -> Result<Vec<Vec<usize>>, (usize, String)> {
    let index: std::collections::HashMap<&str, usize> = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.after
                .iter()
                .map(|name| match index.get(name.as_str()) {
                    Some(&k) if k != i => Ok(k),
                    Some(_) => Err((i, "\"after\" names the scenario itself".to_owned())),
                    None => Err((
                        i,
                        format!(
                            "\"after\" names the scenario {name:?}, which is not in this run: \
                             give its file too (its trials must end before this one's start)"
                        ),
                    )),
                })
                .collect()
        })
        .collect()
}

/// How many scenarios stand before `i` on its longest chain; the loop, if
/// `i` is on one.
fn depth_of(
    i: usize,
    after: &[Vec<usize>],
    depth: &mut [Option<usize>],
    path: &mut Vec<usize>,
) -> Result<usize, Vec<usize>> {
    if let Some(d) = depth[i] {
        return Ok(d);
    }
    if let Some(start) = path.iter().position(|&k| k == i) {
        let mut chain = path[start..].to_vec();
        chain.push(i);
        return Err(chain);
    }
    path.push(i);
    let mut d = 0;
    for &k in &after[i] {
        d = d.max(depth_of(k, after, depth, path)? + 1);
    }
    path.pop();
    depth[i] = Some(d);
    Ok(d)
}
