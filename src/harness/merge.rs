//! `report merge`: shard folders into what one unsharded run would have
//! written. The shards' trials are replayed, in job order, through the
//! same reporters a run feeds; no model is made ready and nothing runs.

use std::io;
use std::path::{Path, PathBuf};

use super::run_file::{RunFile, SuiteChanged};
use crate::report::{self, FinishedTrial, Reporters, RunEvent, RunFiles, TrialReader, Violation};
use crate::scenario::{LoadError, load_suites};
use crate::source::FileError;

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("give at least one shard folder")]
    NoShards,
    #[error(transparent)]
    RunJson(#[from] FileError),
    #[error("{} was run with another configuration than {}", other.display(), first.display())]
    OtherConfiguration { first: PathBuf, other: PathBuf },
    #[error("{} bad scenario file(s) in the run's suite:\n{}", .0.len(), lines(.0))]
    Suite(Vec<LoadError>),
    #[error("{0}; merging would mix two suites")]
    SuiteChanged(#[from] SuiteChanged),
    #[error("{} is given twice", dir.display())]
    GivenTwice { dir: PathBuf },
    #[error(
        "{} and {} are both shard {shard}: the same shard twice, or a shard of another run",
        first.display(),
        other.display()
    )]
    SameShard {
        first: PathBuf,
        other: PathBuf,
        shard: super::Shard,
    },
    #[error("{} is {shard} of another split than {}'s {first_shard}", other.display(), first.display())]
    OtherSplit {
        first: PathBuf,
        first_shard: super::Shard,
        other: PathBuf,
        shard: super::Shard,
    },
    #[error("the shards hold {held} of the {expected} trials: is a shard missing or unfinished?")]
    Incomplete { held: u64, expected: u64 },
    #[error(
        "trial {trial} of {model:?} / {scenario:?} appears in two shards: were they run with other --shard values?"
    )]
    Duplicate {
        model: String,
        scenario: String,
        trial: u32,
    },
    #[error(
        "--out {}: {how} the shard folder {}: a merge never writes into one of its inputs; give another --out",
        out.display(),
        input.display()
    )]
    OutOverlapsInput {
        out: PathBuf,
        input: PathBuf,
        how: &'static str,
    },
    #[error("{}: {problem}: a merge would drop its entries; merge complete shards", path.display())]
    Log { path: PathBuf, problem: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn lines(errors: &[LoadError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a merge found: the threshold violations, the terminal table, and
/// the lines of shards' batch ledgers that a kill tore (not merged).
#[derive(Debug)]
pub struct Merged {
    pub violations: Vec<Violation>,
    pub table: String,
    pub torn_ledger_lines: Vec<(PathBuf, usize)>,
}

/// Merge shard folders into `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let first = dirs.first().ok_or(MergeError::NoShards)?;
    let mut run_file = RunFile::read(first)?;
    check_shards(dirs)?;
    check_out_apart(dirs, out)?;
    check_same_configuration(first, &run_file, &dirs[1..])?;
    let info = run_info(&run_file)?;
    let open = |dir: &PathBuf| {
        let path = dir.join("trials.csv");
        TrialReader::open(&info, &path).map_err(at(&path))
    };

    // Count first, so that nothing is written for an incomplete set.
    let expected = info.models.len() as u64 * info.scenarios.len() as u64 * u64::from(info.trials);
    let mut held = 0;
    for dir in dirs {
        let trials = open(dir)?
            .map(|trial| trial.map(|_| 1))
            .sum::<Result<u64, _>>();
        held += trials.map_err(at(&dir.join("trials.csv")))?;
    }
    if held != expected {
        return Err(MergeError::Incomplete { held, expected });
    }
    // Every shard's log whole, or nothing is written.
    if !run_file.settings.no_session {
        for dir in dirs {
            check_log(&dir.join("session.jsonl"))?;
        }
    }

    crate::whole_file::make_folder(out).map_err(at(out))?;
    run_file.settings.shard = None;
    run_file.write(out).map_err(at(out))?;
    let mut files = RunFiles::create(out, None).map_err(at(out))?;
    let mut shards = dirs
        .iter()
        .map(|dir| open(dir).map(Iterator::peekable))
        .collect::<Result<Vec<_>, _>>()?;
    let torn_ledger_lines;
    let table = {
        let mut reporters = Reporters::new(&info, files.reporters());
        reporters
            .send(RunEvent::Started { trials: 0 })
            .map_err(at(out))?;
        send_in_job_order(&mut shards, &info, &mut reporters, out)?;
        // The log is whole before the reports that read it are written.
        if !run_file.settings.no_session {
            merge_session_logs(dirs, out)?;
        }
        let (batches, torn) = crate::batch::ledger::merge(dirs, out).map_err(at(out))?;
        torn_ledger_lines = torn;
        // The merged batches, as the run's own would be heard.
        for batch in super::batch_records(batches) {
            reporters
                .send(RunEvent::Notice(&report::Notice::Batch(batch)))
                .map_err(at(out))?;
        }
        reporters.send(RunEvent::Finished).map_err(at(out))?;
        report::terminal_summary(
            &info,
            reporters.stats(),
            false,
            Some(&out.join("report.html")),
        )
    };
    Ok(Merged {
        violations: std::mem::take(&mut files.gate.violations),
        table,
        torn_ledger_lines,
    })
}

/// Each shard's trials, read in job order, sent to `reporters` one trial
/// at a time in the run's job order; a trial held twice is refused.
fn send_in_job_order(
    shards: &mut [std::iter::Peekable<TrialReader<'_>>],
    info: &report::RunInfo,
    reporters: &mut Reporters<'_>,
    out: &Path,
) -> Result<(), MergeError> {
    // Each shard's file is in job order: merge them one trial at a time.
    let mut last_key = None;
    loop {
        let mut next: Option<(usize, (usize, usize, u32))> = None;
        for (i, shard) in shards.iter_mut().enumerate() {
            if let Some(Ok(r)) = shard.peek() {
                let key = (r.model, r.scenario, r.trial);
                if next.is_none_or(|(_, best)| key < best) {
                    next = Some((i, key));
                }
            }
        }
        let Some((i, key)) = next else { break };
        let trial = shards[i]
            .next()
            .and_then(Result::ok)
            .expect("peeked a record");
        if last_key == Some(key) {
            return Err(MergeError::Duplicate {
                model: info.models[key.0].name.clone(),
                scenario: info.scenarios[key.1].name.clone(),
                trial: key.2,
            });
        }
        last_key = Some(key);
        reporters
            .send(RunEvent::TrialFinished(FinishedTrial {
                outcome: &trial,
                session: &[],
            }))
            .map_err(at(out))?;
    }
    Ok(())
}

/// Every shard after `first` was run with `first`'s configuration, its
/// shard aside.
fn check_same_configuration(
    first: &Path,
    run_file: &RunFile,
    others: &[PathBuf],
) -> Result<(), MergeError> {
    for dir in others {
        let other = RunFile::read(dir)?;
        let mut same = other.clone();
        same.settings.shard = run_file.settings.shard;
        if same != *run_file {
            return Err(MergeError::OtherConfiguration {
                first: first.to_owned(),
                other: dir.clone(),
            });
        }
    }
    Ok(())
}

/// `out` neither is, nor holds, nor lies inside a shard folder: writing a
/// merge into its own input truncated that input's trials while reading
/// it, and appended its session log to itself until the disk filled.
fn check_out_apart(dirs: &[PathBuf], out: &Path) -> Result<(), MergeError> {
    let out_real = real_path(out).map_err(at(out))?;
    for dir in dirs {
        let input = dir.canonicalize().map_err(at(dir))?;
        let how = if out_real == input {
            "is"
        } else if out_real.starts_with(&input) {
            "lies inside"
        } else if input.starts_with(&out_real) {
            "holds"
        } else {
            continue;
        };
        return Err(MergeError::OutOverlapsInput {
            out: out.to_owned(),
            input: dir.clone(),
            how,
        });
    }
    Ok(())
}

/// `path` with its links resolved, for a path that may not exist yet: its
/// deepest existing folder resolved, the rest as given.
fn real_path(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        rest.push(name.to_owned());
        existing = parent;
    }
    let mut real = existing.canonicalize()?;
    real.extend(rest.iter().rev());
    Ok(real)
}

/// What reporters know of a recorded run. The scenarios give their
/// limits and thresholds; the digest in run.json says they are the ones
/// the run ran.
/// Each folder once, each shard once, all of one split: a folder given
/// twice or a shard of another run is named, not found later as a count
/// that does not add up.
fn check_shards(dirs: &[PathBuf]) -> Result<(), MergeError> {
    let mut seen: Vec<(PathBuf, PathBuf, Option<super::Shard>)> = Vec::new();
    for dir in dirs {
        let canonical = dir.canonicalize().map_err(at(dir))?;
        let shard = RunFile::read(dir)?.settings.shard;
        for (earlier, earlier_canonical, earlier_shard) in &seen {
            if *earlier_canonical == canonical {
                return Err(MergeError::GivenTwice { dir: dir.clone() });
            }
            match (earlier_shard, &shard) {
                (Some(a), Some(b)) if a == b => {
                    return Err(MergeError::SameShard {
                        first: earlier.clone(),
                        other: dir.clone(),
                        shard: *b,
                    });
                }
                (Some(a), Some(b)) if a.count != b.count => {
                    return Err(MergeError::OtherSplit {
                        first: earlier.clone(),
                        first_shard: *a,
                        other: dir.clone(),
                        shard: *b,
                    });
                }
                _ => {}
            }
        }
        seen.push((dir.clone(), canonical, shard));
    }
    Ok(())
}

/// What the reports need of the run: from run.json, which keeps it, so
/// that no suite is loaded and no MCP server started; from the suite for
/// a run folder written before run.json kept it.
fn run_info(run_file: &RunFile) -> Result<report::RunInfo, MergeError> {
    if let Some(info) = run_file.run_info() {
        return Ok(info);
    }
    let sandbox = tempfile::tempdir().map_err(|source| MergeError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    // Servers the suite starts stop when `servers` goes.
    let servers = crate::tool::mcp::ToolServers::new();
    let scenarios = load_suites(&run_file.settings.suite.0, sandbox.path(), &servers)
        .map_err(MergeError::Suite)?
        .scenarios;
    run_file.check_suite(&scenarios)?;
    Ok(run_file.info(&scenarios))
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> MergeError + use<> {
    let path = path.to_owned();
    move |source| MergeError::Io { path, source }
}

/// Write `dir/report.html` for a finished run folder (one run, or merged
/// shards; made before report.html existed too): its trials are replayed
/// through the HTML reporter, its session.jsonl read for the failed
/// trials' conversations. Gives the report's path.
/// A finished run folder's measures, read back from its trials.csv.
/// What reports need of the run in `dir` (its run.json), and a reader of
/// its trials.csv, for a report that reads each trial once.
pub fn trials_of(dir: &Path) -> Result<(report::RunInfo, PathBuf), MergeError> {
    let run_file = RunFile::read(dir)?;
    Ok((run_info(&run_file)?, dir.join("trials.csv")))
}

pub fn measured(dir: &Path) -> Result<(report::RunInfo, crate::metrics::Aggregate), MergeError> {
    let run_file = RunFile::read(dir)?;
    let info = run_info(&run_file)?;
    let trials = dir.join("trials.csv");
    let mut stats = info.aggregate();
    for trial in TrialReader::open(&info, &trials).map_err(at(&trials))? {
        stats.add(&trial.map_err(at(&trials))?);
    }
    Ok((info, stats))
}

pub fn html_report(dir: &Path) -> Result<PathBuf, MergeError> {
    let run_file = RunFile::read(dir)?;
    let info = run_info(&run_file)?;
    let trials = dir.join("trials.csv");
    let reader = TrialReader::open(&info, &trials).map_err(at(&trials))?;
    let mut html = report::HtmlReport::new(dir);
    let mut reporters = Reporters::new(&info, vec![&mut html]);
    reporters
        .send(RunEvent::Started { trials: 0 })
        .map_err(at(dir))?;
    for trial in reader {
        let trial = trial.map_err(at(&trials))?;
        reporters
            .send(RunEvent::TrialFinished(FinishedTrial {
                outcome: &trial,
                session: &[],
            }))
            .map_err(at(dir))?;
    }
    reporters.send(RunEvent::Finished).map_err(at(dir))?;
    Ok(dir.join("report.html"))
}

/// The shards' session logs, one after the other: every entry carries its
/// coordinates, so order between shards does not matter.
fn merge_session_logs(dirs: &[PathBuf], out: &Path) -> Result<(), MergeError> {
    let target = out.join("session.jsonl");
    let fail = |source| MergeError::Io {
        path: target.clone(),
        source,
    };
    crate::whole_file::write_with(&target, |file| {
        for dir in dirs {
            let log = dir.join("session.jsonl");
            io::copy(&mut crate::source::open_run_file(&log)?, file)?;
        }
        Ok(())
    })
    .map_err(fail)
}

/// A shard's session log is there and every line of it is a whole JSON
/// entry: a log missing or torn would leave the merged run's log short
/// without a word.
fn check_log(path: &Path) -> Result<(), MergeError> {
    let file = crate::source::open_run_file(path).map_err(|source| MergeError::Log {
        path: path.to_owned(),
        problem: if source.kind() == io::ErrorKind::NotFound {
            "missing (the shard ran with a log: its run.json does not say --no-session)".to_owned()
        } else {
            source.to_string()
        },
    })?;
    for (n, line) in
        io::BufRead::split(io::BufReader::with_capacity(1 << 20, file), b'\n').enumerate()
    {
        let line = line.map_err(at(path))?;
        if serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_err() {
            return Err(MergeError::Log {
                path: path.to_owned(),
                problem: format!("line {} is not a whole JSON entry", n + 1),
            });
        }
    }
    Ok(())
}
