//! Replays every saved fuzz failure (`regressions/<target>/`) and a seeded random corpus through
//! the same checks the libFuzzer targets run, on stable Rust, in the normal test suite.

use std::path::Path;

use parsec_net_fuzz::TARGETS;

/// A small deterministic generator (xorshift64*), so the random corpus is the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn saved_inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target);
    let mut inputs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        let bytes = std::fs::read(&path).expect("readable regression input");
        inputs.push((path.display().to_string(), bytes));
    }
    inputs.sort();
    inputs
}

#[test]
fn every_saved_failure_passes_now() {
    let mut replayed = 0;
    for (name, check) in TARGETS {
        for (path, bytes) in saved_inputs(name) {
            println!("replaying {path}");
            check(&bytes);
            replayed += 1;
        }
    }
    println!("{replayed} saved inputs replayed");
}

/// Printable text and line breaks dominate, so the text parsers see plausible lines; bytes of
/// any value and mutations of the saved inputs cover the binary decoders.
fn random_input(rng: &mut Rng, saved: &[(String, Vec<u8>)]) -> Vec<u8> {
    const ALPHABET: &[u8] = b"0123456789abcdef:.[]% -_\n\r\tjoinleaveplayerslotnet.api udp ipx";
    if !saved.is_empty() && rng.below(4) == 0 {
        let mut bytes = saved[rng.below(saved.len())].1.clone();
        for _ in 0..1 + rng.below(4) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len());
            bytes[at] = rng.next() as u8;
        }
        return bytes;
    }
    let len = rng.below(300);
    let text = rng.below(2) == 0;
    (0..len)
        .map(|_| {
            if text {
                ALPHABET[rng.below(ALPHABET.len())]
            } else {
                rng.next() as u8
            }
        })
        .collect()
}

#[test]
fn a_seeded_random_corpus_never_breaks_a_parser() {
    const RUNS: usize = 20_000;
    for (index, (name, check)) in TARGETS.iter().enumerate() {
        let saved = saved_inputs(name);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1));
        for _ in 0..RUNS {
            check(&random_input(&mut rng, &saved));
        }
        println!("{name}: {RUNS} random inputs");
    }
}
