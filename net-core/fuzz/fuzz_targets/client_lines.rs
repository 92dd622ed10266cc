//! Fuzz the clients' parsers of server lines (join accepted, add/remove/name updates). Never a
//! panic; what parses has fields in range.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::client_lines(data));
