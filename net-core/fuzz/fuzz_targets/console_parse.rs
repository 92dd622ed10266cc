//! Fuzz the console's parsers: line validation, command splitting, completion, and the
//! argument parsers of settings (link conditions). Never a panic, never an overlong accepted line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::console_parse(data));
