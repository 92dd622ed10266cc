//! The protocol layer: which game protocol is bound (peer-to-peer, slotserver, gameserver) and
//! the calls every protocol answers (connect, disconnect, join, unjoin, update name, maintain).
//!
//! Until a protocol is selected with `net.subsys`, the "no protocol selected" module answers
//! every call with a clear error.

use std::fmt;

use crate::error::{ErrorCode, NetError, NetResult};

/// The protocol modules that can be bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ProtocolKind {
    /// Nothing selected: every protocol call fails with `NoProtocol`.
    Unselected = 0,
    Peer = 1,
    SlotServer = 2,
    GameServer = 3,
}

impl ProtocolKind {
    /// The console name (`net.subsys NAME`).
    pub fn console_name(self) -> &'static str {
        match self {
            ProtocolKind::Unselected => "none",
            ProtocolKind::Peer => "peer",
            ProtocolKind::SlotServer => "slotserver",
            ProtocolKind::GameServer => "gameserver",
        }
    }

    /// Parse a `net.subsys` argument.
    pub fn from_console_name(name: &str) -> Option<ProtocolKind> {
        match name {
            "peer" => Some(ProtocolKind::Peer),
            "slotserver" => Some(ProtocolKind::SlotServer),
            "gameserver" => Some(ProtocolKind::GameServer),
            _ => None,
        }
    }

    /// Whether the protocol needs a client-server capable backend.
    pub fn is_client_server(self) -> bool {
        matches!(self, ProtocolKind::SlotServer | ProtocolKind::GameServer)
    }
}

impl fmt::Display for ProtocolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.console_name())
    }
}

/// The error every protocol call gets while no protocol is selected.
pub fn no_protocol_error(call: &str) -> NetError {
    NetError::new(
        ErrorCode::NoProtocol,
        format!(
            "{call}: no protocol selected (choose one with net.subsys peer|slotserver|gameserver)"
        ),
    )
}

/// The "no protocol selected" module.
pub fn unselected_call(call: &str) -> NetResult<()> {
    Err(no_protocol_error(call))
}
