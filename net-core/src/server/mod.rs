//! The servers of the slotserver and gameserver protocols (design sections 2.3.2 and 2.3.3), and
//! the runtime the masterserver (`crate::master`) runs on too.
//!
//! Sans-IO parts, testable with virtual time:
//! - [`lines`]: framing a TCP byte stream into bounded lines;
//! - [`text_protocol`]: parsing client lines, formatting the server's lines (the exact strings);
//! - [`text_fields`]: the field parsers (numbers, versions, names) both text protocols share;
//! - [`slots`]: [`SlotServerCore`], the TCP-side state machine (slots, replies, list updates,
//!   limits and timeouts) shared by the slotserver and the gameserver;
//! - [`bans`]: the ban list (addresses and networks) and its file;
//! - [`expiry`]: which deadline closes a connection, and the counts (shared with the masterserver);
//! - [`refusal_log`]: the rate limit on refusal log lines (per address and over all), shared
//!   with the masterserver;
//! - [`listing`], [`html`], [`utc`]: the published player list as JSON and HTML;
//! - [`outbuf`]: bounded output queues with partial-write handling;
//! - [`text_core`]: [`TextServerCore`], what the runtime needs from a core (implemented by
//!   [`SlotServerCore`] and the masterserver's core).
//!
//! I/O: [`runtime`] (the mio event loop that drives a core, an optional [`UdpService`] and the
//! registrations with masterservers), [`http`] (the small HTTP endpoint serving the list),
//! [`outgoing`] and [`master_links`] (the connections to masterservers), [`fd_limit`] (raising
//! the open-file limit).
//!
//! What each reply means and how to run a server: docs/server-admin.md.

pub mod bans;
pub mod clock;
pub mod connections;
pub mod expiry;
pub mod fd_limit;
pub mod html;
pub mod http;
pub mod lines;
pub mod listing;
pub mod master_links;
pub mod outbuf;
pub mod outgoing;
pub mod rate;
pub mod refusal_log;
pub mod runtime;
pub mod slots;
pub mod text_core;
pub mod text_fields;
pub mod text_protocol;
pub mod utc;

pub use bans::{BanEntry, BanList};
pub use lines::{LineBuffer, LineFault};
pub use listing::ServerListing;
pub use master_links::{RegistrationSettings, MAX_MASTERS};
pub use rate::RateLimits;
pub use refusal_log::{RefusalLog, RefusalLogLimits};
pub use runtime::{
    run, run_core, stop_on_signals, BoundAddrs, RunSummary, RuntimeConfig, UdpService,
};
pub use slots::{
    ConnId, PlayerRecord, RosterChange, ServerAction, SlotServerConfig, SlotServerCore,
};
pub use text_core::TextServerCore;
pub use text_protocol::{ClientLine, LineError};
