//! Fuzz the demo file reader: any bytes give contents (possibly broken at an offset) or a clear
//! header error, never a panic; what was read re-encodes without error.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::demo_decode(data));
