//! The measures of a whole run, accumulated as trials stream past:
//! constant memory per model x scenario, plus one byte per job for the
//! paired comparisons of models.

use super::{CellStats, TrialOutcome, mcnemar_p_value};

/// Every cell's measures, and each job's outcome for pairing.
#[derive(Debug, Clone)]
pub struct Aggregate {
    /// `cells[model][scenario]`.
    pub cells: Vec<Vec<CellStats>>,
    /// `outcomes[model][scenario * trials + trial]`: 0 not run, 1 failed, 2 succeeded.
    outcomes: Vec<Vec<u8>>,
    trials: u32,
}

/// Two models on the same scenarios and trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Jobs both models ran (and were measured on).
    pub trials: u64,
    pub successes_a: u64,
    pub successes_b: u64,
    /// Jobs only A got right, and only B.
    pub only_a: u64,
    pub only_b: u64,
    /// McNemar's exact test on the discordant pairs.
    pub p_value: f64,
}

impl Paired {
    /// The success rates of A and B over the paired jobs.
    pub fn rates(&self) -> Option<(f64, f64)> {
        (self.trials > 0).then(|| {
            let n = self.trials as f64;
            (self.successes_a as f64 / n, self.successes_b as f64 / n)
        })
    }
}

impl Aggregate {
    /// `max_attempts[model][scenario]` sizes each cell.
    pub fn new(max_attempts: &[Vec<u32>], trials: u32) -> Self {
        let scenarios = max_attempts.first().map_or(0, Vec::len);
        Aggregate {
            cells: max_attempts
                .iter()
                .map(|row| row.iter().map(|&m| CellStats::new(m)).collect())
                .collect(),
            outcomes: vec![vec![0; scenarios * trials as usize]; max_attempts.len()],
            trials,
        }
    }

    pub fn add(&mut self, outcome: &TrialOutcome) {
        let cell = &mut self.cells[outcome.model][outcome.scenario];
        let measured_before = cell.trials;
        cell.add(outcome);
        // A transport error measured nothing: it is not paired either.
        if cell.trials > measured_before {
            let slot = outcome.scenario * self.trials as usize + outcome.trial as usize;
            self.outcomes[outcome.model][slot] = 1 + u8::from(outcome.success());
        }
    }

    /// Trials measured over every cell.
    pub fn measured_trials(&self) -> u64 {
        self.cells.iter().flatten().map(|c| c.trials).sum()
    }

    /// Models `a` and `b` paired on scenario and trial.
    pub fn paired(&self, a: usize, b: usize) -> Paired {
        let mut paired = Paired {
            trials: 0,
            successes_a: 0,
            successes_b: 0,
            only_a: 0,
            only_b: 0,
            p_value: 1.0,
        };
        for (x, y) in self.outcomes[a].iter().zip(&self.outcomes[b]) {
            if *x == 0 || *y == 0 {
                continue;
            }
            paired.trials += 1;
            paired.successes_a += u64::from(*x == 2);
            paired.successes_b += u64::from(*y == 2);
            paired.only_a += u64::from(*x == 2 && *y == 1);
            paired.only_b += u64::from(*x == 1 && *y == 2);
        }
        paired.p_value = mcnemar_p_value(paired.only_a, paired.only_b);
        paired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::AttemptOutcome;
    fn trial(model: usize, trial: u32, success: bool) -> TrialOutcome {
        TrialOutcome {
            model,
            scenario: 0,
            trial,
            attempts: vec![AttemptOutcome {
                attempt: 1,
                success,
                failures: Vec::new(),
                reason: None,
                calls: 1,
                ..Default::default()
            }],
            task: None,
        }
    }

    #[test]
    fn models_are_paired_on_the_same_trials_only() {
        let mut aggregate = Aggregate::new(&[vec![1], vec![1]], 3);
        // Trial 2 of model B never ran (another shard): not paired.
        for (t, a, b) in [(0, true, false), (1, true, true)] {
            aggregate.add(&trial(0, t, a));
            aggregate.add(&trial(1, t, b));
        }
        aggregate.add(&trial(0, 2, false));
        let paired = aggregate.paired(0, 1);
        assert_eq!((paired.trials, paired.only_a, paired.only_b), (2, 1, 0));
        assert_eq!(paired.rates(), Some((1.0, 0.5)));
    }
}
