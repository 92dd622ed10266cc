//! Fuzz the game packet decoder: any bytes give a packet or an error, never a panic, and an
//! accepted packet re-encodes to exactly the same bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::wire_decode(data));
