//! The masterserver (design section 3) and both kinds of its clients.
//!
//! Sans-IO parts, testable with virtual time:
//! - [`protocol`]: the request lines and the design's exact replies, plus our extensions
//!   (`kind:`/`port:`/`udp:` on the join line, `list servers`);
//! - [`list_line`]: one listed server and its line in a list reply (and the console table);
//! - [`core`]: [`MasterCore`], the masterserver's state machine (run by `server::runtime`);
//! - [`pages`]: the list as HTML and JSON;
//! - [`registration`]: [`Registration`], a slot- or gameserver's registration with one
//!   masterserver (join, players updates and keep-alive, remove me, reconnect with backoff);
//! - [`fetch`]: [`ListFetch`], the game's fetch of the lists of up to three masterservers.
//!
//! I/O helper: [`resolve`] (host names looked up without blocking the caller).
//!
//! The protocol, the options and the extensions are documented in docs/server-admin.md.

pub mod core;
pub mod fetch;
pub mod list_line;
pub mod pages;
pub mod protocol;
pub mod registration;
pub mod resolve;

pub use self::core::{
    ListedEntry, MasterConfig, MasterCore, DEFAULT_MAX_SERVERS, EXTRA_CONNECTIONS,
    EXTRA_PER_ADDRESS,
};
pub use fetch::{FetchCommand, FetchResult, ListFetch};
pub use list_line::{format_table, ListedServer};
pub use protocol::ServerKind;
pub use registration::{
    Registration, RegistrationCommand, RegistrationConfig, RegistrationEvent, RegistrationState,
};

/// The masterserver's TCP port (design section 3.1).
pub const MASTER_PORT: u16 = 6502;
/// The masterserver's default HTTP port for the list.
pub const MASTER_HTTP_PORT: u16 = 8502;
