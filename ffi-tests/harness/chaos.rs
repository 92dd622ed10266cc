//! What the seeded random tests share (`api_chaos`, `peer_chaos`, `server_game_chaos`): a small
//! deterministic generator, so a seed replays its script, and the choice of seeds and steps
//! from `PREFIX_SEED` (one seed), `PREFIX_FIRST`/`PREFIX_RUNS` (a search) and `PREFIX_STEPS`.

/// splitmix64, seeded per run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// An index in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with a chance of `percent` in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The number in the environment variable `name`, if set (a test fails on anything else).
pub fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a number")),
    )
}

/// The seeds to run: `PREFIX_SEED` alone, `PREFIX_RUNS` seeds from `PREFIX_FIRST` (default
/// 1000), or `default`.
pub fn seeds(prefix: &str, default: &[u64]) -> Vec<u64> {
    if let Some(seed) = env_u64(&format!("{prefix}_SEED")) {
        return vec![seed];
    }
    if let Some(runs) = env_u64(&format!("{prefix}_RUNS")) {
        let first = env_u64(&format!("{prefix}_FIRST")).unwrap_or(1000);
        return (first..first + runs).collect();
    }
    default.to_vec()
}

/// The steps per run: `PREFIX_STEPS`, or `default`.
pub fn steps(prefix: &str, default: u64) -> u64 {
    env_u64(&format!("{prefix}_STEPS")).unwrap_or(default)
}
