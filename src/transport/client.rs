//! The HTTP client: requests with retries, backoff and rate limits, where
//! each request's time went, and one redirect policy.

use std::time::{Duration, SystemTime};

use rate_limit::RateLimits;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{OrderedPermits, rate_limit};

/// A request ready to send: a POST of a JSON body (the transport sets
/// `content-type`).
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: serde_json::Value,
}

/// Headers whose values are secrets: never recorded, logged or shown.
pub const SECRET_HEADERS: [&str; 3] = ["authorization", "x-api-key", "x-goog-api-key"];

/// How requests are sent: timeout, retries, and bounds on the rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportSettings {
    pub timeout: Duration,
    /// Tries per request, the first included.
    pub max_attempts: u32,
    /// The first retry's backoff; it doubles each time, with jitter.
    pub retry_base: Duration,
    /// Requests in flight at once.
    pub concurrency: usize,
    pub requests_per_minute: Option<u32>,
}

/// An HTTP client that cannot be made (TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("cannot make an HTTP client: {0}")]
pub struct ClientError(String);

/// The order of a request outside a run's trials (doctor, validators):
/// after every ordered one, first come first served among themselves.
pub const UNORDERED: u64 = u64::MAX;

/// Statuses worth another try: rate limits and overloaded or failing servers.
pub const RETRY_STATUSES: [u16; 5] = [429, 500, 502, 503, 529];

/// The longest wait between tries, whatever Retry-After says.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// How long one request may wait out a server's rate limit (429s that
/// say how long to wait): such refusals take no try of `max_attempts`,
/// so a storm of them slows the run rather than losing trials.
const MAX_RATE_LIMITED: Duration = Duration::from_secs(600);

/// A response with a 2xx status.
#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: u16,
    pub body: Vec<u8>,
    /// Where the time went.
    pub timing: Timing,
}

/// Where a request's time went: the server's share (the try that was
/// answered, sent to read) apart from toolgauge's own queue (waiting for
/// a permit and for the pace) and from the tries that failed before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// The answered try: request sent to response body read.
    pub request: Duration,
    /// Waiting for a permit (requests in flight) and for the pace
    /// (requests per minute), over every try.
    pub queued: Duration,
    /// Tries before the answered one.
    pub retries: u32,
    /// Those tries and the backoff between them.
    pub retrying: Duration,
}

/// A request that failed after its retries. Messages never hold a key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    #[error("{url}: HTTP {status} after {tries} tr{}: {excerpt}", if *tries == 1 { "y" } else { "ies" })]
    Status {
        url: String,
        status: u16,
        tries: u32,
        excerpt: String,
    },
    #[error("{url}: {message} (after {tries} tr{})", if *tries == 1 { "y" } else { "ies" })]
    Network {
        url: String,
        message: String,
        tries: u32,
        /// The last try ran out of time (no answer, not a refusal).
        timed_out: bool,
    },
}

impl TransportError {
    /// The HTTP status of a request the server answered, but not with 2xx.
    pub fn status(&self) -> Option<u16> {
        match self {
            TransportError::Status { status, .. } => Some(*status),
            TransportError::Network { .. } => None,
        }
    }
}

pub struct Transport {
    client: reqwest::Client,
    max_attempts: u32,
    retry_base: Duration,
    /// Requests in flight, handed out in the run's order.
    in_flight: OrderedPermits,
    /// Earliest start of the next request, under a requests-per-minute limit.
    pace: Option<(Duration, Mutex<Instant>)>,
    /// What the server's answers said of its rate limits.
    limits: RateLimits,
}

impl Transport {
    pub fn new(settings: &TransportSettings) -> Result<Transport, ClientError> {
        tls_ready();
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Transport {
            client,
            max_attempts: settings.max_attempts.max(1),
            retry_base: settings.retry_base,
            in_flight: OrderedPermits::new(settings.concurrency.max(1)),
            pace: settings.requests_per_minute.map(|rpm| {
                (
                    Duration::from_secs(60) / rpm.max(1),
                    Mutex::new(Instant::now()),
                )
            }),
            limits: RateLimits::default(),
        })
    }

    pub async fn send(&self, request: &ApiRequest) -> Result<ApiResponse, TransportError> {
        self.send_in_order(request, UNORDERED).await
    }

    /// [`Transport::send`] served before requests of a higher `order`
    /// (the trial's place in the run) when requests wait for a permit.
    pub async fn send_in_order(
        &self,
        request: &ApiRequest,
        order: u64,
    ) -> Result<ApiResponse, TransportError> {
        let opened = self.open_in_order(request, order).await?;
        read_whole(opened, &request.url).await
    }

    /// [`Transport::send`] of a body already written as JSON text.
    pub async fn send_body(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
    ) -> Result<ApiResponse, TransportError> {
        self.send_with(reqwest::Method::POST, url, headers, Some(body))
            .await
    }

    /// A POST that makes something paid (a provider's batch): tried
    /// again only after an answer that says nothing was made (429, 503,
    /// 529) or a connection that was never made. A timeout, a dropped
    /// connection or a 500 may follow a batch made: not sent again.
    pub async fn send_create(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
    ) -> Result<ApiResponse, TransportError> {
        let opened = self
            .open_with(
                reqwest::Method::POST,
                url,
                headers,
                Payload::Json(body),
                UNORDERED,
                Retry::WhenNothingWasMade,
            )
            .await?;
        read_whole(opened, url).await
    }

    /// A request of any method, with a JSON body or none.
    pub async fn send_with(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Option<&[u8]>,
    ) -> Result<ApiResponse, TransportError> {
        let payload = body.map_or(Payload::Empty, Payload::Json);
        let opened = self
            .open_with(method, url, headers, payload, UNORDERED, Retry::Any)
            .await?;
        read_whole(opened, url).await
    }

    /// A `multipart/form-data` POST (a file upload); `form` makes the form
    /// afresh for each try, since a form is spent by sending it.
    pub async fn send_form(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        form: &(dyn Fn() -> reqwest::multipart::Form + Sync),
    ) -> Result<ApiResponse, TransportError> {
        let opened = self
            .open_with(
                reqwest::Method::POST,
                url,
                headers,
                Payload::Form(form),
                UNORDERED,
                Retry::Any,
            )
            .await?;
        read_whole(opened, url).await
    }

    /// Send `request` and wait for a 2xx answer's head, through the
    /// retries: its body is the caller's to read (a stream, as it comes).
    pub async fn open(&self, request: &ApiRequest) -> Result<Opened, TransportError> {
        self.open_in_order(request, UNORDERED).await
    }

    /// [`Transport::open`] in the run's order, as [`Transport::send_in_order`].
    pub async fn open_in_order(
        &self,
        request: &ApiRequest,
        order: u64,
    ) -> Result<Opened, TransportError> {
        let body = serde_json::to_vec(&request.body).expect("a request body serializes");
        self.open_with(
            reqwest::Method::POST,
            &request.url,
            &request.headers,
            Payload::Json(&body),
            order,
            Retry::Any,
        )
        .await
    }

    async fn open_with(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Payload<'_>,
        order: u64,
        retry_when: Retry,
    ) -> Result<Opened, TransportError> {
        let (target, url) = (url, redact_url(url));
        let mut tries = 0;
        let mut timing = Timing::default();
        // Rate-limited tries waited out: not counted against max_attempts.
        let (mut rate_limited, mut free_tries) = (Duration::ZERO, 0);
        loop {
            tries += 1;
            let (outcome, sent) = self
                .try_in_turn(&method, target, headers, body, order, &mut timing)
                .await;
            let retry_after = match outcome {
                Ok(Tried::Open(response)) => {
                    timing.retries = tries - 1;
                    return Ok(Opened {
                        status: response.status().as_u16(),
                        response,
                        sent,
                        timing,
                    });
                }
                Ok(Tried::Refused {
                    status,
                    body,
                    retry_after,
                }) => {
                    let retry = retry_when.after_status(status);
                    // A rate limit that says how long: waited out, no try spent.
                    if let Some(wait) = retry_after.filter(|_| status == 429)
                        && rate_limited + wait <= MAX_RATE_LIMITED
                    {
                        rate_limited += wait;
                        free_tries += 1;
                    } else if !retry || tries - free_tries >= self.max_attempts {
                        return Err(TransportError::Status {
                            url,
                            status,
                            tries,
                            excerpt: body_excerpt(&body),
                        });
                    }
                    retry_after
                }
                Err(error) => {
                    if !retry_when.after_error(&error) || tries - free_tries >= self.max_attempts {
                        return Err(TransportError::Network {
                            message: redact_url(&error_chain(&error)),
                            url,
                            tries,
                            timed_out: error.is_timeout(),
                        });
                    }
                    None
                }
            };
            let wait =
                retry_after.unwrap_or_else(|| backoff(self.retry_base, tries, rand::random()));
            tokio::time::sleep(wait.min(MAX_WAIT)).await;
            timing.retrying += sent.elapsed();
        }
    }

    async fn wait_for_pace(&self) {
        let Some((interval, next)) = &self.pace else {
            return;
        };
        let start = {
            let mut next = next.lock().await;
            let start = (*next).max(Instant::now());
            *next = start + *interval;
            start
        };
        tokio::time::sleep_until(start).await;
    }

    /// One try: a 2xx answer with its body unread, or a refusal read
    /// whole with how long it asks us to wait before the next try.
    /// One try once its turn comes (a permit, the pace), the wait added
    /// to `timing`'s queue: its outcome, and when it was sent.
    async fn try_in_turn(
        &self,
        method: &reqwest::Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Payload<'_>,
        order: u64,
        timing: &mut Timing,
    ) -> (Result<Tried, reqwest::Error>, Instant) {
        let queued = Instant::now();
        let _permit = self.in_flight.acquire(order).await;
        self.wait_for_pace().await;
        hold(self.limits.wait_before_try()).await;
        timing.queued += queued.elapsed();
        let sent = Instant::now();
        (self.try_once(method, url, headers, body).await, sent)
    }

    async fn try_once(
        &self,
        method: &reqwest::Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Payload<'_>,
    ) -> Result<Tried, reqwest::Error> {
        let mut builder = self.client.request(method.clone(), url);
        match body {
            Payload::Empty => {}
            Payload::Json(body) => {
                builder = builder
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_vec());
            }
            Payload::Form(form) => builder = builder.multipart(form()),
        }
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
        let response = builder.send().await?;
        let status = response.status().as_u16();
        let now = SystemTime::now();
        let said = rate_limit::read(response.headers(), now);
        if (200..300).contains(&status) {
            self.limits.heard(said, None);
            return Ok(Tried::Open(response));
        }
        let retry_after = retry_after(response.headers(), now);
        self.limits.heard(said, retry_after);
        let body = response.bytes().await?.to_vec();
        Ok(Tried::Refused {
            status,
            body,
            retry_after,
        })
    }
}

/// Which failed tries are tried again.
#[derive(Clone, Copy)]
enum Retry {
    /// Every retryable status and network failure ([`RETRY_STATUSES`]).
    Any,
    /// Only those after which nothing was made: a refusal that says so,
    /// or a connection never made.
    WhenNothingWasMade,
}

impl Retry {
    fn after_status(self, status: u16) -> bool {
        match self {
            Retry::Any => RETRY_STATUSES.contains(&status),
            Retry::WhenNothingWasMade => matches!(status, 429 | 503 | 529),
        }
    }

    fn after_error(self, error: &reqwest::Error) -> bool {
        match self {
            Retry::Any => error.is_timeout() || error.is_connect() || error.is_request(),
            Retry::WhenNothingWasMade => error.is_connect() && !error.is_timeout(),
        }
    }
}

/// What a request carries.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Empty,
    Json(&'a [u8]),
    Form(&'a (dyn Fn() -> reqwest::multipart::Form + Sync)),
}

/// What one try got.
enum Tried {
    Open(reqwest::Response),
    Refused {
        status: u16,
        body: Vec<u8>,
        retry_after: Option<Duration>,
    },
}

/// A 2xx answer whose body is still to be read.
#[derive(Debug)]
pub struct Opened {
    pub status: u16,
    pub response: reqwest::Response,
    /// When the answered try was sent: the body's times count from here.
    pub sent: Instant,
    /// The queue and the retries; `request` is the reader's to set.
    pub timing: Timing,
}

/// How long a refusal asks to wait: OpenAI's `retry-after-ms`, else
/// `Retry-After`.
fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1e3));
    }
    text("retry-after").and_then(|v| parse_retry_after(v, now))
}

/// Retry-After as seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds >= 0.0 && seconds.is_finite()).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

/// Wait `wait`, if any: a zero sleep still waits for the timer's next
/// tick (up to a millisecond a request, the most of toolgauge's own time
/// in a live run).
async fn hold(wait: Duration) {
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
}

/// `base * 2^(try-1)`, scaled by a jitter factor in 0.5..1.5.
pub fn backoff(base: Duration, tries: u32, unit: f64) -> Duration {
    let exponential = base.saturating_mul(1u32 << (tries - 1).min(16));
    exponential.mul_f64(0.5 + unit.clamp(0.0, 1.0))
}

/// A refusal's body as an error shows it: its first 300 characters, no
/// known key in them (some proxies quote the key back in a 401).
pub fn body_excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = crate::secret::redact(&text);
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An error with its causes: reqwest's top-level message hides the cause
/// (connection refused, ...). Shared with the fuzzer's HTTP validators.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A URL with any `key=` query value hidden (Gemini accepts the key
/// there), and any known key.
pub fn redact_url(url: &str) -> String {
    let url = crate::secret::redact(url);
    let Some((base, query)) = url.split_once('?') else {
        return url.into_owned();
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _))
                if name.eq_ignore_ascii_case("key") || name.eq_ignore_ascii_case("api_key") =>
            {
                format!("{name}=[REDACTED]")
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Redirects followed at most, as reqwest's default policy.
const MAX_REDIRECTS: usize = 10;

/// The one redirect policy of every request toolgauge sends: a redirect
/// is followed only within the origin the request was sent to. reqwest
/// drops `Authorization` on a hop to another origin but not `x-api-key`
/// nor `x-goog-api-key`, and a 307 posts the whole body again: a key, or
/// a conversation, goes only where the user sent it.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().unwrap_or(attempt.url());
        let (from, to) = (first.origin(), attempt.url().origin());
        if from != to {
            let refusal = RedirectRefused {
                from: from.ascii_serialization(),
                to: to.ascii_serialization(),
            };
            attempt.error(refusal)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// A redirect to another origin, refused: nothing was sent there.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server at {from} redirected to {to}, another origin: not followed, so no key or body went there (name the endpoint that answers in the model file)"
)]
pub struct RedirectRefused {
    pub from: String,
    pub to: String,
}

/// rustls on ring is the process's TLS provider: installed once, before
/// any HTTP client is built (reqwest's, rmcp's).
pub fn tls_ready() {
    static READY: std::sync::Once = std::sync::Once::new();
    READY.call_once(|| {
        // Err: a provider is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An opened answer's body read whole.
async fn read_whole(opened: Opened, url: &str) -> Result<ApiResponse, TransportError> {
    let status = opened.status;
    let mut timing = opened.timing;
    let body = opened
        .response
        .bytes()
        .await
        .map_err(|error| TransportError::Network {
            message: redact_url(&error_chain(&error)),
            url: redact_url(url),
            tries: timing.retries + 1,
            timed_out: error.is_timeout(),
        })?;
    timing.request = opened.sent.elapsed();
    Ok(ApiResponse {
        status,
        body: body.to_vec(),
        timing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_request_with_nothing_to_wait_for_waits_for_no_timer_tick() {
        // Between two ticks, as a request almost always is.
        tokio::time::advance(Duration::from_micros(500)).await;
        let before = tokio::time::Instant::now();
        hold(Duration::ZERO).await;
        assert_eq!(before.elapsed(), Duration::ZERO);
        // What it guards: tokio's zero sleep waits for the next tick.
        tokio::time::sleep(Duration::ZERO).await;
        assert!(before.elapsed() > Duration::ZERO);
    }

    #[test]
    fn https_clients_build_on_the_one_tls_provider() {
        // reqwest is built without a provider of its own: a client made
        // before ring is installed would fail to build.
        let transport = Transport::new(&TransportSettings {
            timeout: Duration::from_secs(1),
            max_attempts: 1,
            retry_base: Duration::from_millis(1),
            concurrency: 1,
            requests_per_minute: None,
        });
        assert!(transport.is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_spaces_request_starts() {
        let transport = Transport::new(&TransportSettings {
            timeout: Duration::from_secs(1),
            max_attempts: 1,
            retry_base: Duration::from_millis(1),
            concurrency: 1,
            requests_per_minute: Some(120),
        })
        .unwrap();
        let start = Instant::now();
        for _ in 0..3 {
            transport.wait_for_pace().await;
        }
        // 120 per minute: starts at 0, 0.5 s and 1 s.
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let base = Duration::from_millis(100);
        assert_eq!(backoff(base, 1, 0.5), Duration::from_millis(100));
        assert_eq!(backoff(base, 3, 0.5), Duration::from_millis(400));
        assert_eq!(backoff(base, 3, 0.0), Duration::from_millis(200));
        assert_eq!(backoff(base, 3, 1.0), Duration::from_millis(600));
    }
}
