//! The harness of the FFI tests: finds the built parsec-net libraries, compiles the C and C++
//! programs of `ffi-tests/c` and `ffi-tests/cpp` against `include/`, builds the C backends, and
//! runs programs with a time limit (plainly, under AddressSanitizer, or under valgrind), including
//! the two-process datagram exchange driven over stdin/stdout, and the peer-to-peer games of
//! `c/peer_game.c` (several at once, on loopback or on a private LAN of network namespaces, also
//! kept running and driven line by line), and the `parsecnet` servers they play through.
//!
//! Everything the harness builds goes to `<target>/ffi-tests/<profile>/`. Nothing here hangs: every
//! process has a deadline and is killed when it passes it.

pub mod backends;
pub mod chaos;
pub mod compile;
pub mod demo;
pub mod endpoint;
pub mod exchange;
pub mod impaired_lan;
pub mod live;
pub mod netns;
pub mod paths;
pub mod peer;
pub mod peer_chaos;
pub mod process;
pub mod series;
pub mod server;
pub mod soak;

pub use compile::{Build, Lang, Link};
pub use endpoint::Endpoint;
pub use paths::paths;
pub use process::{run, run_under_valgrind, Output};
