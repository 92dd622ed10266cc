//! Fuzz target relay_datagrams: the check is parsec_net_fuzz::relay_datagrams (src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::relay_datagrams(data));
