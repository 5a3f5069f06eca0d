//! The statistics: Wilson score interval, the unbiased pass^k estimator,
//! and McNemar's exact test.

/// 95% Wilson score interval for `successes` of `trials`.
pub fn wilson_interval(successes: u64, trials: u64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// pass^k: the chance that k trials drawn without replacement from `n`
/// (of which `c` succeeded) all succeed, C(c,k)/C(n,k).
pub fn pass_hat_k(c: u64, n: u64, k: u64) -> f64 {
    pass_hat_k_curve(c, n, &[k])[0].1
}

/// The k values a pass^k curve is reported at for `n` trials: 1 to 10,
/// then a 1-2-5 ladder (20, 50, 100, 200, ...) up to `n`, then `n`, plus
/// any `extra` k (a `--min-pass-k` threshold) up to `n`. Sorted, unique.
pub fn pass_k_ladder(n: u64, extra: Option<u64>) -> Vec<u64> {
    let mut ks: Vec<u64> = (1..=n.min(10)).collect();
    let mut decade = 10u64;
    'ladder: loop {
        for step in [2, 5, 10] {
            let k = decade.saturating_mul(step);
            if k > n {
                break 'ladder;
            }
            ks.push(k);
        }
        decade = decade.saturating_mul(10);
    }
    ks.push(n);
    ks.extend(extra.filter(|k| (1..=n).contains(k)));
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// pass^k at each of `ks` (ascending), in one pass over k: each value is
/// the previous one times (c-k+1)/(n-k+1), so the whole curve costs
/// O(largest k), not O(k) per point.
pub fn pass_hat_k_curve(c: u64, n: u64, ks: &[u64]) -> Vec<(u64, f64)> {
    let mut curve = Vec::with_capacity(ks.len());
    let mut value = 1.0;
    let mut reached = 0;
    for &k in ks {
        if k > n {
            curve.push((k, 0.0));
            continue;
        }
        while reached < k {
            // C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i); zero once i reaches c.
            value = if reached < c {
                value * (c - reached) as f64 / (n - reached) as f64
            } else {
                0.0
            };
            reached += 1;
        }
        curve.push((k, value));
    }
    curve
}

/// Two-sided exact McNemar test on the discordant pairs: `b` trials where
/// only the first model succeeded, `c` where only the second did.
pub fn mcnemar_p_value(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_known_values() {
        let (low, high) = wilson_interval(8, 10);
        assert!(
            (low - 0.4902).abs() < 1e-3 && (high - 0.9433).abs() < 1e-3,
            "{low} {high}"
        );
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
        let (low, high) = wilson_interval(10, 10);
        assert!(
            (high - 1.0).abs() < 1e-12 && (low - 0.7225).abs() < 1e-3,
            "{low} {high}"
        );
    }

    #[test]
    fn pass_hat_k_is_the_unbiased_estimator() {
        assert_eq!(pass_hat_k(10, 10, 5), 1.0);
        assert!((pass_hat_k(8, 10, 2) - 56.0 / 90.0).abs() < 1e-12);
        assert_eq!(pass_hat_k(1, 10, 2), 0.0);
        assert!((pass_hat_k(5, 10, 1) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_pass_k_ladder_is_short_and_ends_at_the_trial_count() {
        assert_eq!(pass_k_ladder(3, None), [1, 2, 3]);
        assert_eq!(
            pass_k_ladder(100, Some(37)),
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 37, 50, 100]
        );
        let long = pass_k_ladder(1_000_000, None);
        assert_eq!(long.len(), 10 + 15 + 1 - 1, "{long:?}");
        assert_eq!(long.last(), Some(&1_000_000));
        assert_eq!(
            pass_k_ladder(35, Some(50)),
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 35]
        );
    }

    #[test]
    fn the_pass_k_curve_is_the_ratio_of_binomials_at_every_k() {
        // C(c,k)/C(n,k), each binomial computed on its own.
        let choose =
            |n: u64, k: u64| (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
        for (c, n) in [(0, 5), (3, 5), (5, 5), (73, 100), (99, 100)] {
            let ks: Vec<u64> = (1..=n).collect();
            for (k, value) in pass_hat_k_curve(c, n, &ks) {
                let direct = if k > c {
                    0.0
                } else {
                    choose(c, k) / choose(n, k)
                };
                assert!(
                    (value - direct).abs() <= 1e-9 * direct.max(1e-300),
                    "c={c} n={n} k={k}: {value} vs {direct}"
                );
            }
        }
        assert_eq!(pass_hat_k_curve(2, 3, &[4]), [(4, 0.0)]);
    }

    #[test]
    fn mcnemar_exact_values() {
        assert_eq!(mcnemar_p_value(0, 0), 1.0);
        // b=1, c=9: 2 * (1 + 10) / 1024
        assert!((mcnemar_p_value(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert!((mcnemar_p_value(5, 5) - 1.0).abs() < 1e-12);
        assert!(mcnemar_p_value(100, 160) < 0.001);
    }
}
