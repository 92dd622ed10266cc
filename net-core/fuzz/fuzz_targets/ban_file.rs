//! Fuzz target ban_file: the check is parsec_net_fuzz::ban_file (src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::ban_file(data));
