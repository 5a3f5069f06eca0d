//! The measures of tasks (multi-step trials): how a task ended, progress
//! over its milestones, turns and calls per task, redundant calls, and
//! how many call errors the model recovered from later in the task.

use std::collections::BTreeMap;

/// Why a task's loop stopped.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[strum(serialize_all = "snake_case")]
pub enum Ending {
    /// The model answered without a call.
    Answer,
    /// Every turn was used.
    TurnLimit,
    /// A forbidden call ended it at once.
    ForbiddenCall,
    /// Lost to infrastructure (a failed request, a reply not of the
    /// format, a tool that could not run): not the model's doing.
    Lost,
}

impl Ending {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(text: &str) -> Option<Ending> {
        text.parse().ok()
    }
}

/// How one task trial ended (its turns are the trial's attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskEnd {
    pub success: bool,
    pub ending: Ending,
    /// How many milestones the task has, over all its user turns.
    pub milestones: u32,
    /// How many user turns it has (1: the user speaks once).
    pub user_turns: u32,
}

/// Mean of a histogram (value -> count).
pub fn histogram_mean(histogram: &BTreeMap<u32, u64>) -> Option<f64> {
    let n: u64 = histogram.values().sum();
    let sum: u64 = histogram.iter().map(|(v, c)| u64::from(*v) * c).sum();
    (n > 0).then(|| sum as f64 / n as f64)
}

/// The nearest-rank percentile `q` (0..=1) of a histogram.
pub fn histogram_percentile(histogram: &BTreeMap<u32, u64>, q: f64) -> Option<u32> {
    let n: u64 = histogram.values().sum();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    histogram.iter().find_map(|(value, count)| {
        seen += count;
        (seen >= rank).then_some(*value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_mean_and_nearest_rank_percentile() {
        let histogram: BTreeMap<u32, u64> = [(2, 18), (3, 1), (9, 1)].into();
        assert_eq!(histogram_mean(&histogram), Some(2.4));
        assert_eq!(histogram_percentile(&histogram, 0.95), Some(3));
        assert_eq!(histogram_percentile(&histogram, 1.0), Some(9));
        assert_eq!(histogram_percentile(&histogram, 0.5), Some(2));
        assert_eq!(histogram_percentile(&BTreeMap::new(), 0.5), None);
    }
}
