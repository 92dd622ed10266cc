//! Fuzz node parsing of the UDP and IPX backends through their vtables, exactly as the core
//! calls them: any text is a node or an error, never a crash; a parsed node prints and parses
//! back to the same node.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsec_net_fuzz::node_parse(data));
