//! The suite folders (or files) a run names, as run.json writes them.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The suite folders (or files) of a run, in order: one is written as a
/// path, several as an array of paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuitePaths(pub Vec<PathBuf>);

impl std::fmt::Display for SuitePaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, path) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" + ")?;
            }
            write!(f, "{}", path.display())?;
        }
        Ok(())
    }
}

impl Serialize for SuitePaths {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(serializer),
            many => many.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SuitePaths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(PathBuf),
            Many(Vec<PathBuf>),
        }
        Ok(match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(path) => SuitePaths(vec![path]),
            OneOrMany::Many(paths) => SuitePaths(paths),
        })
    }
}
