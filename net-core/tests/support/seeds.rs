//! The seed ranges of the randomised simulations: defaults in the tests, other ranges from the
//! environment (docs/fuzzing.md names the variables).
#![allow(dead_code)]

/// A number from the environment variable `name`, if it is set to one.
pub fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
