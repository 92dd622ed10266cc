//! `parsecnet bench --quick` end to end: the table and `bench.json` hold every figure with a
//! finite number and the SVG plots exist as whole `<svg>` documents. Speed is never asserted:
//! the figures only have to be there.

use std::path::PathBuf;
use std::process::Command;

/// Keys of the figures every quick run must report (section key, figure key).
const FIGURES: &[(&str, &str)] = &[
    ("rtt", "udp_p50_us"),
    ("rtt", "udp_p99_us"),
    ("rtt", "stack_p50_us"),
    ("rtt", "stack_p99_us"),
    ("rtt", "ratio_p50"),
    ("rtt", "drained_p50_us"),
    ("rtt", "floor_ratio_p50"),
    ("echo", "echoes_per_s"),
    ("jump_table", "compare_ratio"),
    ("jump_table", "maintain_ratio"),
    ("backend_switch", "pause_ms"),
    ("backend_switch", "reliable_lost"),
    ("gameserver_scaling", "cpu_us_per_tick_16"),
    ("gameserver_scaling", "cpu_us_per_tick_100"),
    ("gameserver_scaling", "cpu_us_per_tick_1000"),
    ("gameserver_scaling", "bytes_out_per_client_s_1000"),
    ("gameserver_scaling", "heap_per_client_1000"),
    ("p2p_startup", "all_in_p50_ms"),
    ("p2p_startup", "all_in_max_ms"),
    ("allocations", "pingpong_per_packet"),
    ("allocations", "echo_per_packet"),
];

const PLOTS: &[&str] = &[
    "rtt_cdf.svg",
    "rtt_histogram.svg",
    "scaling_cpu.svg",
    "scaling_bytes.svg",
    "scaling_memory.svg",
];

/// A directory removed when the test ends, passed or failed.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The number after `"value": ` in the JSON object of figure `key` (the writer puts `key`
/// first and `value` third in each figure object).
fn figure_value(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"key\": \"{key}\""))?;
    let rest = &json[at..];
    let value = rest.find("\"value\": ")? + "\"value\": ".len();
    let end = rest[value..].find([',', '\n'])?;
    Some(rest[value..value + end].trim().to_string())
}

#[test]
fn quick_bench_reports_every_figure_and_writes_the_plots() {
    let dir = TempDir(std::env::temp_dir().join(format!("parsecnet-bench-{}", std::process::id())));
    let output = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
        .args(["bench", "--quick", "--out"])
        .arg(&dir.0)
        .env("PARSEC_NET_LOG", "off")
        .output()
        .expect("running parsecnet bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "parsecnet bench --quick failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        !stdout.contains("FAILED"),
        "a measurement failed:\n{stdout}"
    );
    for header in [
        "figure", "value", "unit", "baseline", "ratio", "target", "met",
    ] {
        assert!(
            stdout.contains(header),
            "table has no '{header}' column:\n{stdout}"
        );
    }

    let json = std::fs::read_to_string(dir.0.join("bench.json")).expect("bench.json written");
    assert!(json.trim_start().starts_with('{') && json.trim_end().ends_with('}'));
    assert!(json.contains("\"mode\": \"quick\""), "{json}");
    for (section, key) in FIGURES {
        assert!(
            json.contains(&format!("\"key\": \"{section}\"")),
            "section {section} missing from bench.json"
        );
        let value = figure_value(&json, key)
            .unwrap_or_else(|| panic!("figure {key} missing from bench.json"));
        let number: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("figure {key} is '{value}', not a number"));
        assert!(number.is_finite(), "figure {key} is {number}");
    }
    // The table shows each section by its title, and no figure as "-" (not finite).
    for title in [
        "round trip",
        "windowed echo",
        "jump table",
        "backend switch",
        "gameserver scaling",
        "p2p startup",
        "heap allocations",
    ] {
        assert!(stdout.contains(title), "table lacks '{title}':\n{stdout}");
    }
    for line in stdout
        .lines()
        .filter(|l| l.contains("µs") || l.contains("/s"))
    {
        assert!(
            !line.split_whitespace().any(|w| w == "-"),
            "non-finite figure: {line}"
        );
    }

    for plot in PLOTS {
        let path = dir.0.join(plot);
        let svg = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
        assert!(svg.starts_with("<svg"), "{plot} does not start with <svg");
        assert!(
            svg.trim_end().ends_with("</svg>"),
            "{plot} does not end with </svg>"
        );
        assert!(svg.contains("<polyline"), "{plot} has no data line");
    }
}
