//! A probe's score (`final_state.probe.score`): a reward, its named
//! components, why the conversation ended and what a judging model took,
//! as the probe's own judge gave them (tau2's evaluator, say), kept per
//! trial and counted per cell.

use std::collections::BTreeMap;

/// A component or a reward counts as passed at this value or above (tau2's
/// `is_successful`: a reward of 1 within float error).
pub const PASSED: f64 = 1.0 - 1e-6;

/// One trial's score, read from its probe's result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Score {
    /// `None`: unknown, its judge having failed (the parts judged
    /// without it are still here).
    pub reward: Option<f64>,
    /// By name, in the probe's order (tau2: `DB`, `COMMUNICATE`, ...).
    pub components: Vec<(String, f64)>,
    /// Why the conversation ended, in the judge's words.
    pub reason: Option<String>,
    /// Yes-or-no checks beside the reward, by name, in the probe's order;
    /// `None`: not checked (tau2: `db_match`, unchecked when the
    /// conversation was cut short).
    pub checks: Vec<(String, Option<bool>)>,
    /// A model that judged (tau2's NL assertions), apart from the agent.
    pub judge: Option<JudgeUse>,
}

/// What a judging model gave and took for one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeUse {
    /// Its reward each time it judged (`--judge-repeats`); the first counts.
    pub verdicts: Vec<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl JudgeUse {
    /// Whether its verdicts on the same conversation differ.
    pub fn flipped(&self) -> bool {
        self.verdicts.iter().any(|v| *v != self.verdicts[0])
    }
}

/// Running scores of one cell, or of a group of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreStats {
    /// Trials that gave a score, their reward known or not.
    pub scored: u64,
    /// Of them, trials whose reward is unknown (their judge failed).
    pub unknown: u64,
    pub reward_sum: f64,
    /// Trials whose reward passed.
    pub rewarded: u64,
    /// By component: (passed, scored).
    pub components: BTreeMap<String, (u64, u64)>,
    /// Trials by why they ended (unnamed ones apart).
    pub reasons: BTreeMap<String, u64>,
    /// By check: (yes, checked); trials that name it unchecked are
    /// neither.
    pub checks: BTreeMap<String, (u64, u64)>,
    /// Trials a model judged, those whose verdicts flipped, and what the
    /// judge took.
    pub judged: u64,
    pub flipped: u64,
    pub judge_input_tokens: u64,
    pub judge_output_tokens: u64,
    pub judge_cost_usd: f64,
}

impl ScoreStats {
    pub fn add(&mut self, score: &Score) {
        self.scored += 1;
        self.unknown += u64::from(score.reward.is_none());
        self.reward_sum += score.reward.unwrap_or(0.0);
        self.rewarded += u64::from(score.reward.is_some_and(|r| r >= PASSED));
        for (name, value) in &score.components {
            let entry = self.components.entry(name.clone()).or_default();
            entry.0 += u64::from(*value >= PASSED);
            entry.1 += 1;
        }
        if let Some(reason) = &score.reason {
            *self.reasons.entry(reason.clone()).or_default() += 1;
        }
        for (name, checked) in &score.checks {
            let entry = self.checks.entry(name.clone()).or_default();
            entry.0 += u64::from(*checked == Some(true));
            entry.1 += u64::from(checked.is_some());
        }
        if let Some(judge) = &score.judge {
            self.judged += 1;
            self.flipped += u64::from(judge.flipped());
            self.judge_input_tokens += judge.input_tokens;
            self.judge_output_tokens += judge.output_tokens;
            self.judge_cost_usd += judge.cost_usd;
        }
    }

    pub fn merge(&mut self, other: &ScoreStats) {
        self.scored += other.scored;
        self.unknown += other.unknown;
        self.reward_sum += other.reward_sum;
        self.rewarded += other.rewarded;
        for (name, (passed, scored)) in &other.components {
            let entry = self.components.entry(name.clone()).or_default();
            entry.0 += passed;
            entry.1 += scored;
        }
        for (reason, n) in &other.reasons {
            *self.reasons.entry(reason.clone()).or_default() += n;
        }
        for (name, (yes, checked)) in &other.checks {
            let entry = self.checks.entry(name.clone()).or_default();
            entry.0 += yes;
            entry.1 += checked;
        }
        self.judged += other.judged;
        self.flipped += other.flipped;
        self.judge_input_tokens += other.judge_input_tokens;
        self.judge_output_tokens += other.judge_output_tokens;
        self.judge_cost_usd += other.judge_cost_usd;
    }

    /// Trials whose reward is known.
    pub fn known(&self) -> u64 {
        self.scored - self.unknown
    }

    /// The mean of the rewards known.
    pub fn mean_reward(&self) -> Option<f64> {
        (self.known() > 0).then(|| self.reward_sum / self.known() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(reward: f64, db: f64, reason: &str) -> Score {
        // Checked, and matched, only when the conversation was not cut short.
        let db_match = (reason != "too_many_errors").then_some(db >= PASSED);
        Score {
            reward: Some(reward),
            components: vec![("DB".into(), db), ("COMMUNICATE".into(), 1.0)],
            reason: Some(reason.into()),
            checks: vec![("db_match".into(), db_match)],
            judge: Some(JudgeUse {
                verdicts: vec![reward, db],
                input_tokens: 10,
                output_tokens: 2,
                cost_usd: 0.5,
            }),
        }
    }

    #[test]
    fn a_component_passes_at_one_within_float_error_and_not_below() {
        let mut stats = ScoreStats::default();
        stats.add(&score(0.999_999_9, 0.999_999_9, "user_stop"));
        stats.add(&score(0.5, 0.99, "too_many_errors"));
        assert_eq!(stats.rewarded, 1);
        assert_eq!(stats.components["DB"], (1, 2));
        assert_eq!(stats.components["COMMUNICATE"], (2, 2));
        assert_eq!(stats.reasons["too_many_errors"], 1);
        assert_eq!(stats.checks["db_match"], (1, 1), "yes once, unchecked once");
        // Judged twice each: 0.9999999 and 0.9999999 agree, 0.5 and 0.99 do not.
        assert_eq!((stats.judged, stats.flipped), (2, 1));
        assert_eq!(stats.judge_input_tokens, 20);
        let mean = stats.mean_reward().unwrap();
        assert!((mean - 0.749_999_95).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn merged_scores_count_as_added_ones() {
        let (mut one, mut a, mut b) = Default::default();
        for (i, s) in [score(1.0, 1.0, "a"), score(0.0, 0.0, "b")]
            .iter()
            .enumerate()
        {
            ScoreStats::add(&mut one, s);
            ScoreStats::add(if i == 0 { &mut a } else { &mut b }, s);
        }
        ScoreStats::merge(&mut a, &b);
        assert_eq!(a, one);
    }
}
