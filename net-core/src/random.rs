//! Unpredictable numbers for session tokens and default names: from the standard library's
//! per-process random hash keys mixed with the time, so two processes (or two calls) started
//! together still differ. Not for cryptography; the simulator has its own seeded generator
//! (`sim::Rng`).

use std::hash::{BuildHasher, Hasher};
use std::time::SystemTime;

/// A random non-zero number.
pub fn nonzero_u32() -> u32 {
    loop {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let value = hasher.finish() as u32;
        if value != 0 {
            return value;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_differ_and_are_never_zero() {
        let values: std::collections::HashSet<u32> =
            (0..64).map(|_| super::nonzero_u32()).collect();
        assert!(values.len() > 60, "{} distinct of 64", values.len());
        assert!(!values.contains(&0));
    }
}
