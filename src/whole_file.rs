//! Report files written whole or not at all: the bytes go to a temporary
//! file beside the target, which is renamed into place. A reader (or a
//! crash, or a report written from its own inputs) never sees half a file,
//! and a link at the target's name is replaced, never written through.

use std::io::{self, Write};
use std::path::Path;

/// Write `bytes` to `path` whole.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_with(path, |out| out.write_all(bytes.as_ref()))
}

/// What `write_with`'s filler writes to: no known key gets through.
pub type Out<'a> = crate::secret::Redacting<io::BufWriter<&'a mut std::fs::File>>;

/// Write to `path` whole what `fill` writes, every known key replaced.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut Out<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::Builder::new()
        .prefix(".toolgauge-")
        .suffix(".partial")
        .tempfile_in(dir)?;
    {
        let mut out = crate::secret::Redacting::new(io::BufWriter::new(temporary.as_file_mut()));
        fill(&mut out)?;
        out.finish()?.flush()?;
    }
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Make the report folder `path` (and its parents): a file or anything
/// else already there is refused, named, not reported as "File exists".
pub fn make_folder(path: &Path) -> io::Result<()> {
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_dir()
    {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "it is a file, not a folder: --out takes a folder (made if need be)",
        ));
    }
    std::fs::create_dir_all(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_a_link_at_its_name_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "host").unwrap();
        let target = dir.path().join("report.csv");
        std::os::unix::fs::symlink(&outside, &target).unwrap();
        write(&target, "a,b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "a,b\n");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "host");
        // A failed fill leaves the old file and no temporary behind.
        let failed = write_with(&target, |_| Err(io::Error::other("stop")));
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "a,b\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
