//! The resident memory and open file descriptors of a process, read from `/proc`, sampled over a
//! soak run, and the rule that says whether they grew: after a warm-up (the first quarter of the
//! run), the samples of the last quarter may not exceed the highest of the second quarter (the
//! early plateau) by more than [`GrowthLimits`].

use std::time::Duration;

/// One reading of a process.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Time since the run started.
    pub at: Duration,
    /// `VmRSS` from `/proc/PID/status`, in KiB.
    pub rss_kib: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: usize,
}

/// `VmRSS` of process `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// How many file descriptors process `pid` holds open.
pub fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// Read both; None if the process is gone.
pub fn sample(pid: u32, at: Duration) -> Option<Sample> {
    Some(Sample {
        at,
        rss_kib: rss_kib(pid)?,
        fds: fd_count(pid)?,
    })
}

/// How far the late samples may rise above the early plateau.
#[derive(Clone, Copy, Debug)]
pub struct GrowthLimits {
    /// RSS: this fraction of the plateau, or [`GrowthLimits::rss_kib`], whichever is larger.
    pub rss_fraction: f64,
    pub rss_kib: u64,
    /// Open file descriptors: this many more.
    pub fds: usize,
}

/// The margins of docs/soak.md.
pub const LIMITS: GrowthLimits = GrowthLimits {
    rss_fraction: 0.10,
    rss_kib: 4096,
    fds: 4,
};

/// What the samples of one run show.
#[derive(Clone, Debug)]
pub struct Growth {
    pub first: Sample,
    pub last: Sample,
    pub max_rss_kib: u64,
    pub max_fds: usize,
    /// Highest readings of the second quarter (the early plateau) and of the last quarter.
    pub early_rss_kib: u64,
    pub late_rss_kib: u64,
    pub early_fds: usize,
    pub late_fds: usize,
    pub rss_limit_kib: u64,
    pub fd_limit: usize,
    pub samples: usize,
}

impl Growth {
    /// Whether the late samples stay within the limits.
    pub fn within_limits(&self) -> bool {
        self.late_rss_kib <= self.rss_limit_kib && self.late_fds <= self.fd_limit
    }

    /// The figures, on one line.
    pub fn describe(&self) -> String {
        format!(
            "{} samples; RSS first {} KiB, last {} KiB, max {} KiB, early plateau {} KiB, late \
             max {} KiB (limit {} KiB); fds first {}, last {}, max {}, early plateau {}, late \
             max {} (limit {})",
            self.samples,
            self.first.rss_kib,
            self.last.rss_kib,
            self.max_rss_kib,
            self.early_rss_kib,
            self.late_rss_kib,
            self.rss_limit_kib,
            self.first.fds,
            self.last.fds,
            self.max_fds,
            self.early_fds,
            self.late_fds,
            self.fd_limit
        )
    }
}

/// Judge `samples` of a run that lasted `run`; an error if a quarter holds no sample.
pub fn growth(samples: &[Sample], run: Duration, limits: GrowthLimits) -> Result<Growth, String> {
    let quarter = run / 4;
    let within = |from: Duration, to: Duration| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.at >= from && s.at < to)
            .collect()
    };
    let early = within(quarter, quarter * 2);
    let late = within(run - quarter, run + Duration::from_secs(3600));
    if early.is_empty() || late.is_empty() {
        return Err(format!(
            "too few samples to judge growth: {} in the second quarter, {} in the last",
            early.len(),
            late.len()
        ));
    }
    let early_rss_kib = early.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let early_fds = early.iter().map(|s| s.fds).max().unwrap_or(0);
    let margin = ((early_rss_kib as f64 * limits.rss_fraction) as u64).max(limits.rss_kib);
    Ok(Growth {
        first: samples[0],
        last: samples[samples.len() - 1],
        max_rss_kib: samples.iter().map(|s| s.rss_kib).max().unwrap_or(0),
        max_fds: samples.iter().map(|s| s.fds).max().unwrap_or(0),
        early_rss_kib,
        late_rss_kib: late.iter().map(|s| s.rss_kib).max().unwrap_or(0),
        early_fds,
        late_fds: late.iter().map(|s| s.fds).max().unwrap_or(0),
        rss_limit_kib: early_rss_kib + margin,
        fd_limit: early_fds + limits.fds,
        samples: samples.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(rss: impl Fn(u64) -> u64, fds: impl Fn(u64) -> usize) -> Vec<Sample> {
        (0..40)
            .map(|s| Sample {
                at: Duration::from_secs(s),
                rss_kib: rss(s),
                fds: fds(s),
            })
            .collect()
    }

    #[test]
    fn a_flat_run_after_warm_up_is_within_limits() {
        let samples = run_of(|s| if s < 5 { 5000 } else { 20_000 + s % 3 }, |_| 20);
        let g = growth(&samples, Duration::from_secs(40), LIMITS).unwrap();
        assert!(g.within_limits(), "{}", g.describe());
        assert_eq!((g.first.rss_kib, g.early_fds, g.fd_limit), (5000, 20, 24));
    }

    #[test]
    fn steady_growth_of_memory_or_descriptors_is_caught() {
        let leaking = run_of(|s| 20_000 + s * 400, |_| 20);
        let g = growth(&leaking, Duration::from_secs(40), LIMITS).unwrap();
        assert!(!g.within_limits(), "{}", g.describe());
        let fd_leak = run_of(|_| 20_000, |s| 20 + s as usize / 3);
        let g = growth(&fd_leak, Duration::from_secs(40), LIMITS).unwrap();
        assert!(!g.within_limits(), "{}", g.describe());
    }

    #[test]
    fn too_few_samples_cannot_be_judged() {
        let samples = run_of(|_| 1, |_| 1);
        assert!(growth(&samples[..5], Duration::from_secs(40), LIMITS).is_err());
    }
}
