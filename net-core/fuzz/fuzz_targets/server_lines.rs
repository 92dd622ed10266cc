//! Fuzz the servers' side of the text protocols: line framing over arbitrary byte chunks and
//! the parser of client lines. Never a panic; framing never yields a line over the limit.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::server_lines(data));
