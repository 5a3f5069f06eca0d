//! report.html in a real browser: headless Chromium, driven by
//! playwright-core (tests/browser, installed by .ci/run with `npm ci`).
//! Skipped, saying why, where Chromium, Node or the package is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::toolgauge;

/// Chromium, Node and playwright-core, or why the test cannot run here.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium = std::env::var_os("TOOLGAUGE_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .ok_or("no Chromium (/usr/bin/chromium; or set TOOLGAUGE_CHROMIUM)")?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    if !root.join("node_modules/playwright-core").is_dir() {
        return Err("no playwright-core: run `npm ci --prefix tests/browser`".into());
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Err("no Node.js on PATH".into());
    }
    Ok((chromium, root.join("check.mjs")))
}

#[test]
#[ignore = "needs Chromium and playwright-core: npm ci --prefix tests/browser (.ci/run installs both, and runs this with --ignored)"]
fn report_html_renders_every_chart_sorts_and_filters_in_a_browser() {
    let (chromium, script) = match browser() {
        Ok(found) => found,
        Err(why) => {
            panic!("missing: report_html_renders_every_chart_sorts_and_filters_in_a_browser: {why}")
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = toolgauge(&[
        "run",
        "scenarios/starter/parallel_weather_3.json",
        "scenarios/starter/runtime_recovery.json",
        "scenarios/agent/store_refund_order.json",
        "--models",
        "scenarios/models",
        "--trials",
        "5",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let screenshot = out.join("report.png");
    let checked = Command::new("node")
        .arg(&script)
        .arg(out.join("report.html"))
        .arg(&screenshot)
        .arg(&chromium)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let seen: Value = serde_json::from_slice(&checked.stdout).unwrap();

    assert_eq!(
        seen["errors"],
        serde_json::json!([]),
        "console or network errors"
    );
    // Each chart drew every point its SVG file holds, with a visible size.
    let charts = seen["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 9, "{charts:?}");
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "svg") {
            continue;
        }
        let svg = std::fs::read_to_string(&path).unwrap();
        let title = svg
            .split("aria-label=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let marks = svg.matches("class=\"mark\"").count() as u64;
        let chart = charts
            .iter()
            .find(|c| c["title"].as_str().unwrap().replace('&', "&amp;") == title)
            .unwrap_or_else(|| panic!("{} is not in report.html", path.display()));
        assert!(marks > 0, "{title}: no data point");
        assert_eq!(chart["marks"].as_u64(), Some(marks), "{title}");
        assert_eq!(
            chart["drawn"].as_u64(),
            Some(marks),
            "{title}: a mark has no size"
        );
    }
    // Worst first, then sorted by a click each way.
    let numbers = |key: &str| -> Vec<f64> {
        seen[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let before = numbers("before");
    assert_eq!(before.len(), 4 * 3);
    assert!(before.is_sorted(), "worst first: {before:?}");
    assert!(numbers("ascending").is_sorted());
    assert!(numbers("descending").iter().rev().is_sorted());
    // Filtering by the first model leaves its rows only.
    let shown = seen["shown"].as_array().unwrap();
    assert_eq!(shown.len(), 3);
    assert!(shown.iter().all(|m| m == &shown[0]));
    assert!(std::fs::metadata(&screenshot).unwrap().len() > 10_000);
}
