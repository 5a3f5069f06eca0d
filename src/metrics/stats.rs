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
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| {
        if c < k {
            0.0
        } else {
            acc * (c - i) as f64 / (n - i) as f64
        }
    })
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
    fn mcnemar_exact_values() {
        assert_eq!(mcnemar_p_value(0, 0), 1.0);
        // b=1, c=9: 2 * (1 + 10) / 1024
        assert!((mcnemar_p_value(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert!((mcnemar_p_value(5, 5) - 1.0).abs() < 1e-12);
        assert!(mcnemar_p_value(100, 160) < 0.001);
    }
}
