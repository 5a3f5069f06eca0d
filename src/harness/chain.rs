//! Scenarios that run `after` others: a trial waits until the trials it
//! follows (the same model, the same trial number) have ended, and those
//! trials share a folder the run owns (`{chain_dir}` in a per-trial
//! server's `trial_args`), where what one leaves the next finds. A trial
//! whose prerequisite was lost is lost too, charged to the same party.
//! Scenarios joined by no `after` never share a folder.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::job::Job;
use crate::call::Failure;
use crate::tool::ChainFolderError;

/// The run's prerequisites and what has ended, by job.
#[derive(Debug, Default)]
pub struct Chains {
    /// By scenario: the scenarios whose trials end before its own start.
    after: Vec<Vec<usize>>,
    /// By scenario: it is on a chain (follows or is followed) or its tools
    /// use a chain folder.
    chained: Vec<bool>,
    /// By scenario: the first scenario of its chain, which shards by.
    root: Vec<usize>,
    ended: Mutex<HashMap<Job, Option<Failure>>>,
    changed: tokio::sync::Notify,
    /// The folders, one per model and trial number, made on first use
    /// and removed with the run.
    folder: OnceLock<Result<tempfile::TempDir, ChainFolderError>>,
}

impl Chains {
    /// From each scenario's prerequisites (indices, earlier in the run's
    /// order) and whether its tools use a chain folder (`{chain_dir}`).
    pub fn new(after: Vec<Vec<usize>>, uses_folder: &[bool]) -> Chains {
        let mut chained: Vec<bool> = (0..after.len())
            .map(|i| uses_folder.get(i).copied().unwrap_or(false))
            .collect();
        // Union-find: scenarios joined by `after` share their smallest index.
        let mut root: Vec<usize> = (0..after.len()).collect();
        fn find(root: &mut [usize], mut i: usize) -> usize {
            while root[i] != i {
                root[i] = root[root[i]];
                i = root[i];
            }
            i
        }
        for (i, before) in after.iter().enumerate() {
            for &k in before {
                chained[i] = true;
                chained[k] = true;
                let (a, b) = (find(&mut root, i), find(&mut root, k));
                root[a.max(b)] = a.min(b);
            }
        }
        for i in 0..root.len() {
            root[i] = find(&mut root, i);
        }
        Chains {
            after,
            chained,
            root,
            ..Chains::default()
        }
    }

    /// The scenario a shard counts `scenario` as: its chain's first, so
    /// that a chain is never split between shards.
    pub fn shard_scenario(&self, scenario: usize) -> usize {
        self.root.get(scenario).copied().unwrap_or(scenario)
    }

    /// Whether `job`'s scenario waits for others.
    pub fn waits(&self, job: Job) -> bool {
        self.after.get(job.scenario).is_some_and(|a| !a.is_empty())
    }

    /// Wait until every trial `job` follows has ended: the failure that
    /// lost one of them, if one was lost, and which.
    pub async fn prerequisites_ended(&self, job: Job) -> Option<(usize, Failure)> {
        let before = self.after.get(job.scenario)?;
        loop {
            let changed = self.changed.notified();
            {
                let ended = self.ended.lock().expect("never poisoned");
                let all = before
                    .iter()
                    .all(|&scenario| ended.contains_key(&Job { scenario, ..job }));
                if all {
                    return before.iter().find_map(|&scenario| {
                        ended[&Job { scenario, ..job }].map(|failure| (scenario, failure))
                    });
                }
            }
            changed.await;
        }
    }

    /// `job` has ended (`lost`: the failure that lost it).
    pub fn ended(&self, job: Job, lost: Option<Failure>) {
        if !self.chained.get(job.scenario).copied().unwrap_or(false) {
            return;
        }
        self.ended.lock().expect("never poisoned").insert(job, lost);
        self.changed.notify_waiters();
    }

    /// The folder `job`'s chain shares, its own for each model and trial
    /// number (`None`: its scenario neither is on a chain nor uses a
    /// chain folder); why it could not be made.
    pub fn folder(&self, job: Job) -> Option<Result<PathBuf, ChainFolderError>> {
        if !self.chained.get(job.scenario).copied().unwrap_or(false) {
            return None;
        }
        let root = self.folder.get_or_init(|| {
            tempfile::Builder::new()
                .prefix("toolgauge-chains-")
                .tempdir()
                .map_err(|e| ChainFolderError {
                    path: std::env::temp_dir(),
                    source: Arc::new(e),
                })
        });
        Some(match root {
            Ok(root) => {
                // One folder per chain: scenarios on no common chain
                // never see each other's state.
                let chain = self.shard_scenario(job.scenario);
                let folder = root.path().join(format!(
                    "model{}-trial{}-chain{chain}",
                    job.model, job.trial
                ));
                match std::fs::create_dir_all(&folder) {
                    Ok(()) => Ok(folder),
                    Err(e) => Err(ChainFolderError {
                        path: folder,
                        source: Arc::new(e),
                    }),
                }
            }
            Err(e) => Err(e.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(scenario: usize) -> Job {
        Job {
            model: 0,
            scenario,
            trial: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_starts_only_when_every_trial_it_follows_has_ended() {
        let chains = std::sync::Arc::new(Chains::new(vec![vec![], vec![], vec![0, 1]], &[]));
        let waiting = {
            let chains = chains.clone();
            tokio::spawn(async move { chains.prerequisites_ended(job(2)).await })
        };
        tokio::task::yield_now().await;
        chains.ended(job(0), None);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one prerequisite is still running");
        chains.ended(job(1), Some(Failure::ToolUnavailable));
        let lost = waiting.await.unwrap();
        assert_eq!(lost, Some((1, Failure::ToolUnavailable)));
        // Another trial number has its own chain.
        let other = Job { trial: 1, ..job(0) };
        assert_eq!(
            chains.folder(other).unwrap().unwrap().file_name().unwrap(),
            "model0-trial1-chain0"
        );
        assert!(chains.folder(job(0)).unwrap().unwrap().is_dir());
        assert_eq!(chains.shard_scenario(2), 0);
    }

    #[test]
    fn scenarios_on_no_chain_have_no_folder_and_wait_for_nothing() {
        let chains = Chains::new(vec![vec![], vec![0], vec![]], &[]);
        // Two chains joined by a third scenario shard as one.
        let joined = Chains::new(vec![vec![], vec![], vec![0, 1]], &[]);
        assert_eq!(joined.shard_scenario(1), 0);
        assert!(chains.folder(job(2)).is_none());
        assert!(!chains.waits(job(0)));
        assert!(chains.waits(job(1)));
        assert_eq!(chains.shard_scenario(2), 2);
    }
}
