//! HTTP transport, neutral to what it carries (live models' requests,
//! external validators'): one connection pool per user, a bound on requests
//! in flight, an optional requests-per-minute pace, a per-request timeout,
//! and retries with exponential backoff and jitter on 429, 500, 502, 503,
//! 529 and connection failures, honouring Retry-After. Other 4xx answers
//! are not retried. The server's rate-limit headers (`rate_limit`) set
//! the pace of every request the transport sends.

mod client;
mod permits;
mod rate_limit;

pub use client::{
    ApiRequest, ApiResponse, ClientError, Opened, RETRY_STATUSES, RedirectRefused, SECRET_HEADERS,
    Timing, Transport, TransportError, TransportSettings, UNORDERED, backoff, body_excerpt,
    error_chain, parse_retry_after, redact_url, tls_ready,
};
pub use permits::OrderedPermits;
