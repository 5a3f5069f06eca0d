//! `Shard`: which part of a run's jobs one process runs, as `--shard K/N`
//! and run.json write it.

/// Which part of the jobs this process runs: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = |problem: String| ShardError { problem };
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| bad("use K/N, e.g. 1/4".to_owned()))?;
        let index: u32 = k
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad shard index {k:?}")))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| bad(format!("bad shard count {n:?}")))?;
        if count == 0 || index == 0 || index > count {
            return Err(bad("K must be between 1 and N".to_owned()));
        }
        Ok(Shard { index, count })
    }

    pub(super) fn includes(self, job: u64) -> bool {
        job % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        Shard::parse(text)
    }
}

/// As `--shard` and run.json write it: `K/N`.
impl serde::Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Shard, D::Error> {
        let text = String::deserialize(deserializer)?;
        Shard::parse(&text).map_err(|e| serde::de::Error::custom(format!("shard {text:?}: {e}")))
    }
}

/// A shard that is not K/N with 1 <= K <= N: what is wrong with it (the
/// flag's parser and run.json's reader each name the text).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{problem}")]
pub struct ShardError {
    pub problem: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_written_as_k_of_n_and_read_back_typed() {
        let shard = Shard::parse("2/3").unwrap();
        assert_eq!(serde_json::to_string(&shard).unwrap(), "\"2/3\"");
        assert_eq!(serde_json::from_str::<Shard>("\"2/3\"").unwrap(), shard);
        // A run.json with a shard no flag could give is refused as it is read.
        let error = serde_json::from_str::<Shard>("\"0/2\"").unwrap_err();
        assert_eq!(
            error.to_string(),
            "shard \"0/2\": K must be between 1 and N"
        );
        assert_eq!(
            "x".parse::<Shard>().unwrap_err().to_string(),
            "use K/N, e.g. 1/4"
        );
    }
}
