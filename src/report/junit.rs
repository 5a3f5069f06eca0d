//! junit.xml for CI: one test suite per model, one test case per scenario,
//! failing when the cell is below its threshold or was not measured. Each
//! case's time is the model and tool time its trials took.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{Reporter, RunInfo, cell_violations, violations};
use crate::metrics::Aggregate;

/// Writes junit.xml when the run finishes.
pub struct JUnitXml {
    path: PathBuf,
}

impl JUnitXml {
    pub fn new(path: &Path) -> Self {
        JUnitXml {
            path: path.to_owned(),
        }
    }
}

impl Reporter for JUnitXml {
    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        let mut report = Report::new("toolgauge");
        let mut total = Duration::ZERO;
        for (m, cells) in stats.cells.iter().enumerate() {
            let model = &info.models[m].name;
            let mut suite = TestSuite::new(model.as_str());
            let mut suite_time = Duration::ZERO;
            for (s, cell) in cells.iter().enumerate() {
                let messages = cell_violations(info, s, cell);
                let status = if messages.is_empty() {
                    TestCaseStatus::success()
                } else {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    let rate = (cell.trials > 0).then(|| cell.final_success());
                    status
                        .set_message(messages.join("; "))
                        .set_description(format!(
                            "final success {} over {} trials",
                            rate.map_or("-".to_owned(), |r| format!("{:.1}%", 100.0 * r)),
                            cell.trials
                        ));
                    status
                };
                let mut case = TestCase::new(info.scenarios[s].name.as_str(), status);
                case.set_classname(model.as_str()).set_time(cell.busy);
                // The measured rate, where CI systems show it.
                if cell.trials > 0 {
                    let (low, high) = cell.wilson();
                    case.add_property((
                        "final_success",
                        format!("{:.6}", cell.final_success()).as_str(),
                    ))
                    .add_property(("trials", cell.trials.to_string().as_str()))
                    .set_system_out(format!(
                        "final success {:.1}% [{:.1}%, {:.1}%] over {} trials",
                        100.0 * cell.final_success(),
                        100.0 * low,
                        100.0 * high,
                        cell.trials
                    ));
                }
                suite_time += cell.busy;
                suite.add_test_case(case);
            }
            suite.set_time(suite_time);
            total += suite_time;
            report.add_test_suite(suite);
        }
        // A run that measured nothing fails as a whole.
        if stats.measured_trials() == 0 {
            let mut suite = TestSuite::new("toolgauge");
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let reasons: Vec<String> = violations(info, stats)
                .into_iter()
                .map(|v| v.message)
                .collect();
            status.set_message(reasons.join("; "));
            suite.add_test_case(TestCase::new("run", status));
            report.add_test_suite(suite);
        }
        report.set_time(total);
        crate::whole_file::write_with(&self.path, |file| {
            report.serialize(file).map_err(io::Error::other)
        })
    }
}
