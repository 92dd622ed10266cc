//! The servers of the slotserver and gameserver protocols (design sections 2.3.2 and 2.3.3).
//!
//! Sans-IO parts, testable with virtual time:
//! - [`lines`]: framing a TCP byte stream into bounded lines;
//! - [`text_protocol`]: parsing client lines, formatting the server's lines (the exact strings);
//! - [`slots`]: [`SlotServerCore`], the TCP-side state machine (slots, replies, list updates,
//!   limits and timeouts) shared by the slotserver and the gameserver;
//! - [`bans`]: the ban list (addresses and networks) and its file;
//! - [`listing`], [`html`], [`utc`]: the published player list as JSON and HTML;
//! - [`outbuf`]: bounded output queues with partial-write handling.
//!
//! I/O: [`runtime`] (the mio event loop that drives the core and an optional [`UdpService`])
//! and [`http`] (the small HTTP endpoint serving the list).
//!
//! What each reply means and how to run a server: docs/server-admin.md.

pub mod bans;
pub mod html;
pub mod http;
pub mod lines;
pub mod listing;
pub mod outbuf;
pub mod runtime;
pub mod slots;
pub mod text_protocol;
pub mod utc;

pub use bans::{BanEntry, BanList};
pub use lines::{LineBuffer, LineFault};
pub use listing::ServerListing;
pub use runtime::{run, stop_on_signals, BoundAddrs, RunSummary, RuntimeConfig, UdpService};
pub use slots::{
    ConnId, PlayerRecord, RosterChange, ServerAction, SlotServerConfig, SlotServerCore,
};
pub use text_protocol::{ClientLine, LineError};
