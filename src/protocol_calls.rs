//! The protocol entries of the jump table (`NETs_Connect` .. `NETs_MaintainNet`).
//!
//! `*_via::<K>` are the entries of protocol module K that `NET_GetJumpTable()` hands out while K
//! is bound; the exported `NETs_*` functions are what `PARSEC_NET_STATIC_BIND` calls. Both serve
//! the protocol bound at the moment of the call.

use net_core::protocol::ProtocolKind;
use net_core::NetResult;

use crate::ffi_guard::{guard, guard_code};
use crate::global::with_subsystem_timed;

fn call(
    _module: u8,
    f: impl FnOnce(&mut net_core::Subsystem, std::time::Instant) -> NetResult<()>,
) -> i32 {
    guard_code(|| with_subsystem_timed(|sub, now| f(sub, now).map(|()| 0)))
}

pub extern "C" fn connect_via<const K: u8>() -> i32 {
    call(K, |sub, now| {
        // No address: the server from net.server for client-server protocols, else discovery.
        let server = sub
            .settings()
            .server
            .clone()
            .filter(|_| sub.protocol().is_client_server());
        sub.connect(now, server.as_deref()).map(|_| ())
    })
}

pub extern "C" fn disconnect_via<const K: u8>() -> i32 {
    call(K, |sub, now| sub.disconnect(now))
}

pub extern "C" fn join_via<const K: u8>() -> i32 {
    call(K, |sub, now| sub.join(now).map(|_| ()))
}

pub extern "C" fn unjoin_via<const K: u8>(flag: u8) -> i32 {
    call(K, |sub, now| sub.unjoin(flag, now))
}

pub extern "C" fn update_name_via<const K: u8>() -> i32 {
    call(K, |sub, now| sub.update_name(now).map(|_| ()))
}

pub extern "C" fn maintain_via<const K: u8>() {
    guard(
        |_| (),
        || {
            with_subsystem_timed(|sub, now| {
                sub.maintain(now);
                Ok(())
            })
        },
    );
}

const UNBOUND: u8 = ProtocolKind::Unselected as u8;

/// Connect with the selected protocol: to the server set by `net.server`, or by peer-to-peer
/// discovery. Returns NET_OK or an error code.
#[no_mangle]
pub extern "C" fn NETs_Connect() -> i32 {
    connect_via::<UNBOUND>()
}

/// Disconnect and free the slot. Returns NET_OK or an error code.
#[no_mangle]
pub extern "C" fn NETs_Disconnect() -> i32 {
    disconnect_via::<UNBOUND>()
}

/// Join the game (leave spectator mode). Returns NET_OK (also when already joined: a backend
/// switch keeps the player joined) or an error code.
#[no_mangle]
pub extern "C" fn NETs_Join() -> i32 {
    join_via::<UNBOUND>()
}

/// Unjoin the game but stay connected; `flag` is passed to the other players.
#[no_mangle]
pub extern "C" fn NETs_Unjoin(flag: u8) -> i32 {
    unjoin_via::<UNBOUND>(flag)
}

/// Tell the others about a new player name (set with NET_SetPlayerName). On a slot or
/// gameserver the server is asked first and the others are told once it accepts; a refusal
/// arrives as NET_EVENT_ERROR and the name in use stays.
#[no_mangle]
pub extern "C" fn NETs_UpdateName() -> i32 {
    update_name_via::<UNBOUND>()
}

/// Call once per frame: send what the game queued, receive, run timers, send what became due.
#[no_mangle]
pub extern "C" fn NETs_MaintainNet() {
    maintain_via::<UNBOUND>()
}
