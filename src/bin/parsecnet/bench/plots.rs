//! The benchmark's plots as SVG files: the round-trip distribution (histogram and CDF) of raw
//! UDP against the whole stack, and the gameserver's CPU, bytes and memory against clients.

use std::path::{Path, PathBuf};

use super::rtt::RttResult;
use super::sampling::{percentile, sorted};
use super::scaling::ScalingRow;
use super::svg::{Chart, Series};

/// A named quantity of a scaling row, for one line of a plot.
type RowSeries<'a> = (&'a str, fn(&ScalingRow) -> f64);

const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#7f7f7f"];

fn write(dir: &Path, name: &str, chart: &Chart) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, chart.to_svg())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The RTT samples by kind.
fn kinds(r: &RttResult) -> [(&'static str, Vec<f64>); 4] {
    [
        ("raw UDP", sorted(r.udp.clone())),
        ("whole stack", sorted(r.stack.clone())),
        ("whole stack, reliable", sorted(r.stack_reliable.clone())),
        (
            "raw UDP + draining read (floor)",
            sorted(r.udp_drained.clone()),
        ),
    ]
}

/// rtt_cdf.svg and rtt_histogram.svg.
pub fn rtt(dir: &Path, r: &RttResult) -> Result<Vec<PathBuf>, String> {
    let kinds = kinds(r);
    let cdf = Chart {
        title: "Round-trip time, 64 bytes on loopback (CDF)".into(),
        x_label: "round-trip time (µs, log scale)".into(),
        y_label: "share of round trips at or below".into(),
        log_x: true,
        series: kinds
            .iter()
            .zip(COLORS)
            .map(|((name, samples), color)| Series {
                name: (*name).into(),
                color,
                points: (0..=200)
                    .map(|i| {
                        let q = f64::from(i) / 2.0;
                        (percentile(samples, q.max(0.01)), q / 100.0)
                    })
                    .collect(),
            })
            .collect(),
    };
    // Histogram over the common range up to the highest p99, 60 bins.
    let hi = kinds
        .iter()
        .map(|(_, s)| percentile(s, 99.0))
        .fold(0.0, f64::max)
        .max(1.0);
    let bins = 60usize;
    let width = hi / bins as f64;
    let histogram = Chart {
        title: "Round-trip time, 64 bytes on loopback (histogram up to the highest p99)".into(),
        x_label: "round-trip time (µs)".into(),
        y_label: "share of round trips per bin".into(),
        log_x: false,
        series: kinds
            .iter()
            .zip(COLORS)
            .map(|((name, samples), color)| {
                let mut counts = vec![0usize; bins];
                for v in samples.iter().filter(|v| **v < hi) {
                    counts[((v / width) as usize).min(bins - 1)] += 1;
                }
                let n = samples.len().max(1) as f64;
                Series {
                    name: (*name).into(),
                    color,
                    points: counts
                        .iter()
                        .enumerate()
                        .flat_map(|(i, c)| {
                            let y = *c as f64 / n;
                            [(i as f64 * width, y), ((i + 1) as f64 * width, y)]
                        })
                        .collect(),
                }
            })
            .collect(),
    };
    Ok(vec![
        write(dir, "rtt_cdf.svg", &cdf)?,
        write(dir, "rtt_histogram.svg", &histogram)?,
    ])
}

/// scaling_cpu.svg, scaling_bytes.svg, scaling_memory.svg.
pub fn scaling(dir: &Path, rows: &[ScalingRow]) -> Result<Vec<PathBuf>, String> {
    let one = |title: &str, y_label: &str, series: Vec<RowSeries>| Chart {
        title: title.into(),
        x_label: "simulated clients (log scale)".into(),
        y_label: y_label.into(),
        log_x: true,
        series: series
            .into_iter()
            .zip(COLORS)
            .map(|((name, value), color)| Series {
                name: name.into(),
                color,
                points: rows.iter().map(|r| (r.clients as f64, value(r))).collect(),
            })
            .collect(),
    };
    let cpu = one(
        "Gameserver relay: CPU per 50 ms tick",
        "µs per tick",
        vec![("relay CPU", |r| r.cpu_us_per_tick)],
    );
    let bytes = one(
        "Gameserver relay: bytes per client per second",
        "bytes per second",
        vec![
            ("to each client", |r| r.bytes_out_per_client_s),
            ("from each client", |r| r.bytes_in_per_client_s),
        ],
    );
    let memory = one(
        "Gameserver relay: heap per client",
        "bytes",
        vec![("relay heap per client", |r| r.heap_bytes_per_client)],
    );
    Ok(vec![
        write(dir, "scaling_cpu.svg", &cpu)?,
        write(dir, "scaling_bytes.svg", &bytes)?,
        write(dir, "scaling_memory.svg", &memory)?,
    ])
}
