//! Fuzz the masterserver's request parser and the list-line parser of its clients: never a
//! panic; what parses writes back to an equal line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::master_lines(data));
