//! parsec-net core: all the logic of the networking subsystem, with no `extern "C"` functions.
//!
//! Layers, top to bottom (see docs/architecture.md):
//! - [`subsystem`]: one complete instance the C API (or a test, the demo, a server) drives;
//! - [`console`]: the command table shared by `NET_ConsoleExec` and `parsecnet console`;
//! - [`protocol`]: the switchable game protocols;
//! - [`packet_api`]: backend plugins (loader, validated vtables, the active socket and queues).

pub mod console;
pub mod demo;
pub mod error;
pub mod game;
pub mod master;
pub mod packet_api;
pub mod pooled_bytes;
pub mod protocol;
pub mod random;
pub mod relay;
pub mod rmev;
pub mod server;
pub mod session;
pub mod sim;
pub mod subsystem;
pub mod wire;

pub use error::{ErrorCode, NetError, NetResult};
pub use parsec_backend_abi::NET_Node as Node;
pub use subsystem::Subsystem;
