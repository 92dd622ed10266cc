//! Fuzz target http_request: the check is parsec_net_fuzz::http_request (src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::http_request(data));
