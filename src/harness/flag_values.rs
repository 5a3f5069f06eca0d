//! The values of `run`'s flags that are more than a number, read as clap
//! reads the flags: `--shard K/N` (or `auto/N`), `--min-pass-k K:RATE`,
//! `--max-cost USD`.

use super::Shard;

/// Where `--shard auto/N` reads its index.
const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// A `--shard` that is neither K/N nor auto/N with its index set.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadShard {
    #[error(transparent)]
    Shard(#[from] super::ShardError),
    #[error(
        "auto/N takes K from {JOB_INDEX} (a Kubernetes Indexed Job's, 0-based), which is {0}; \
         give K/N elsewhere"
    )]
    NoIndex(&'static str),
}

/// `--shard K/N` or `auto/N`, as clap parses the flag.
pub(crate) fn parse_shard(text: &str) -> Result<Shard, BadShard> {
    let Some(count) = text.strip_prefix("auto/") else {
        return Ok(Shard::parse(text)?);
    };
    let index = std::env::var(JOB_INDEX).map_err(|_| BadShard::NoIndex("not set"))?;
    let index: u32 = index
        .trim()
        .parse()
        .map_err(|_| BadShard::NoIndex("not a whole number"))?;
    let one_based = index.checked_add(1).ok_or(BadShard::NoIndex("too large"))?;
    Ok(Shard::parse(&format!("{one_based}/{count}"))?)
}

/// A `--min-pass-k` that is not K:RATE.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadPassK {
    #[error("use K:RATE, e.g. 3:0.8")]
    Form,
    #[error("K must be a whole number")]
    K,
    #[error("RATE must be a number")]
    Rate,
    #[error("K must be at least 1")]
    Zero,
}

/// `--min-pass-k K:RATE`, as clap parses the flag.
pub(crate) fn parse_pass_k(text: &str) -> Result<(u64, f64), BadPassK> {
    let (k, rate) = text.split_once(':').ok_or(BadPassK::Form)?;
    let k: u64 = k.parse().map_err(|_| BadPassK::K)?;
    let rate: f64 = rate.parse().map_err(|_| BadPassK::Rate)?;
    if k == 0 {
        return Err(BadPassK::Zero);
    }
    Ok((k, rate))
}

/// A `--max-cost` that is not a positive number of dollars.
#[derive(Debug, thiserror::Error)]
#[error("give US dollars above 0, e.g. 2.50")]
pub(crate) struct BadDollars;

/// `--max-cost USD`, as clap parses the flag.
pub(crate) fn parse_dollars(text: &str) -> Result<f64, BadDollars> {
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(BadDollars),
    }
}
