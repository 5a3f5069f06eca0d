//! What a server says of its rate limits, read from its answers' headers
//! and kept for every request of one transport: how many requests it will
//! still take before its window resets, and until when it will take none
//! (a limit spent, or a 429's `retry-after`). The transport waits for it
//! before each try, so the run goes at the pace the server sets.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// Requests the server still takes: OpenAI's, then Anthropic's.
const REQUESTS: [(&str, &str); 2] = [
    (
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ),
    (
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
    ),
];

/// Tokens it still takes: a request's size is not known before it is
/// sent, so only a count of none holds requests back.
const TOKENS: [(&str, &str); 4] = [
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    (
        "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-tokens-reset",
    ),
    (
        "anthropic-ratelimit-input-tokens-remaining",
        "anthropic-ratelimit-input-tokens-reset",
    ),
    (
        "anthropic-ratelimit-output-tokens-remaining",
        "anthropic-ratelimit-output-tokens-reset",
    ),
];

/// The longest a server's headers hold requests back at once.
const MAX_HOLD: Duration = Duration::from_secs(60);

/// What one answer said.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Said {
    /// Requests it still takes, and when that count resets.
    pub remaining: Option<(u64, Duration)>,
    /// It takes none for this long.
    pub hold: Option<Duration>,
}

/// Read an answer's rate-limit headers; `retry_after` is a refusal's.
pub fn read(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Said {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let count = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
    let reset = |name: &str| text(name).and_then(|v| reset_in(v, now));
    let remaining = REQUESTS
        .iter()
        .find_map(|(left, at)| Some((count(left)?, reset(at).unwrap_or_default())));
    let spent_tokens = TOKENS
        .iter()
        .filter(|(left, _)| count(left) == Some(0))
        .filter_map(|(_, at)| reset(at))
        .max();
    Said {
        remaining,
        hold: spent_tokens.map(|hold| hold.min(MAX_HOLD)),
    }
}

/// When a count resets: OpenAI writes a duration (`1s`, `6m0s`, `20ms`,
/// `1m30.5s`), Anthropic an RFC 3339 time.
pub fn reset_in(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(value) {
        let at = SystemTime::from(at);
        return Some(at.duration_since(now).unwrap_or_default());
    }
    go_duration(value)
}

/// A duration as Go prints one: numbers each with a unit, `h`, `m`, `s`,
/// `ms`, `us`, `ns`.
fn go_duration(value: &str) -> Option<Duration> {
    let mut total = 0.0;
    let mut rest = value;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    (total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total))
}

/// The server's limits as the transport last heard them.
#[derive(Debug, Default)]
pub struct RateLimits {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests it still takes before `reset`.
    remaining: Option<(u64, Instant)>,
    /// It takes none before this.
    hold_until: Option<Instant>,
}

impl RateLimits {
    /// How long the next try must wait, counting it against what the
    /// server still takes.
    pub fn wait_before_try(&self) -> Duration {
        let now = Instant::now();
        let mut state = self.state.lock().expect("never poisoned");
        let mut until = state.hold_until.filter(|at| *at > now);
        match state.remaining {
            Some((0, reset)) if reset > now => {
                until = until.max(Some(reset));
                // After the reset the server's next answer says again.
                state.remaining = None;
            }
            Some((0, _)) => state.remaining = None,
            Some((left, reset)) => state.remaining = Some((left - 1, reset)),
            None => {}
        }
        until.map_or(Duration::ZERO, |at| at - now)
    }

    /// What an answer said; `retry_after` holds every request, not only
    /// the refused one's next try.
    pub fn heard(&self, said: Said, retry_after: Option<Duration>) {
        let now = Instant::now();
        let mut state = self.state.lock().expect("never poisoned");
        if let Some((left, reset)) = said.remaining {
            state.remaining = Some((left, now + reset.min(MAX_HOLD)));
        }
        for hold in said.hold.into_iter().chain(retry_after) {
            let at = now + hold.min(MAX_HOLD);
            state.hold_until = state.hold_until.max(Some(at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn openai_durations_and_anthropic_times_are_read() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        for (text, seconds) in [
            ("1s", 1.0),
            ("6m0s", 360.0),
            ("20ms", 0.02),
            ("1m30.5s", 90.5),
            ("2h", 7200.0),
        ] {
            assert_eq!(
                reset_in(text, now),
                Some(Duration::from_secs_f64(seconds)),
                "{text}"
            );
        }
        // 1,764,000,000 is 2025-11-24T16:00:00Z.
        assert_eq!(
            reset_in("2025-11-24T16:00:12Z", now),
            Some(Duration::from_secs(12))
        );
        assert_eq!(reset_in("2025-11-24T15:00:00Z", now), Some(Duration::ZERO));
        assert_eq!(reset_in("soon", now), None);
        assert_eq!(reset_in("5parsecs", now), None);
    }

    #[test]
    fn each_providers_headers_say_what_is_left_and_a_spent_token_limit_holds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        let openai = read(
            &headers(&[
                ("x-ratelimit-remaining-requests", "2"),
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "250ms"),
            ]),
            now,
        );
        assert_eq!(openai.remaining, Some((2, Duration::from_secs(1))));
        assert_eq!(openai.hold, Some(Duration::from_millis(250)));
        let anthropic = read(
            &headers(&[
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2025-11-24T16:00:03Z"),
                ("anthropic-ratelimit-input-tokens-remaining", "10000"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2025-11-24T16:00:09Z",
                ),
            ]),
            now,
        );
        assert_eq!(anthropic.remaining, Some((0, Duration::from_secs(3))));
        assert_eq!(anthropic.hold, None, "tokens are left");
        assert_eq!(read(&HeaderMap::new(), now), Said::default());
    }

    #[tokio::test(start_paused = true)]
    async fn the_count_left_is_spent_try_by_try_then_waits_for_its_reset() {
        let limits = RateLimits::default();
        limits.heard(
            Said {
                remaining: Some((2, Duration::from_secs(5))),
                hold: None,
            },
            None,
        );
        assert_eq!(limits.wait_before_try(), Duration::ZERO);
        assert_eq!(limits.wait_before_try(), Duration::ZERO);
        assert_eq!(limits.wait_before_try(), Duration::from_secs(5));
        // A 429's retry-after holds every request.
        limits.heard(Said::default(), Some(Duration::from_millis(700)));
        assert_eq!(limits.wait_before_try(), Duration::from_millis(700));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(limits.wait_before_try(), Duration::ZERO);
    }
}
