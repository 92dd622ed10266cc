//! The plain-data C types of the game interface (`NET_ShipState`, `NET_Event`) and their
//! conversion from the core's types. Field order is ABI: only append.

use std::ffi::c_char;

use net_core::rmev::{RemoteEvent, ShipState, GAME_AREA_LEN};
use net_core::session::GameEvent;

/// Size of the game-defined area of a ship state.
pub const NET_SHIP_GAME_AREA: usize = 32;
const _: () = assert!(NET_SHIP_GAME_AREA == GAME_AREA_LEN);
/// Capacity of `NET_Event.text` (a NUL-terminated string).
pub const NET_EVENT_TEXT_LEN: usize = 256;
/// Capacity of `NET_Event.data`.
pub const NET_EVENT_DATA_LEN: usize = 256;
/// `NET_RmEvCustom` flag: retransmit until acknowledged, deliver once and in order.
pub const NET_SEND_RELIABLE: u32 = 1;

/// Event types of `NET_Event.type`.
pub const NET_EVENT_CONNECTED: u32 = 1;
pub const NET_EVENT_DISCONNECTED: u32 = 2;
pub const NET_EVENT_PLAYER_CONNECTED: u32 = 3;
pub const NET_EVENT_PLAYER_DISCONNECTED: u32 = 4;
pub const NET_EVENT_PLAYER_JOINED: u32 = 5;
pub const NET_EVENT_PLAYER_UNJOINED: u32 = 6;
pub const NET_EVENT_PLAYER_NAME: u32 = 7;
pub const NET_EVENT_TEXT: u32 = 8;
pub const NET_EVENT_CREATE_OBJECT: u32 = 9;
pub const NET_EVENT_CREATE_LASER: u32 = 10;
pub const NET_EVENT_CREATE_MISSILE: u32 = 11;
pub const NET_EVENT_CREATE_EXTRA: u32 = 12;
pub const NET_EVENT_KILL_OBJECT: u32 = 13;
pub const NET_EVENT_PARTICLE_OBJECT: u32 = 14;
pub const NET_EVENT_CUSTOM: u32 = 15;
pub const NET_EVENT_ERROR: u32 = 16;
/// A server-list fetch completed (NET_FetchServerList, console `servers`): player_id -1,
/// object_id = number of servers listed now, text = the masterservers that failed, if any.
pub const NET_EVENT_SERVER_LIST: u32 = 17;

/// A ship's state: sent with every packet while joined; latest wins.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NET_ShipState {
    pub pos: [f32; 3],
    /// Orientation quaternion x, y, z, w.
    pub orient: [f32; 4],
    pub vel: [f32; 3],
    /// Game-defined bytes, carried as they are.
    pub game: [u8; NET_SHIP_GAME_AREA],
}

impl From<NET_ShipState> for ShipState {
    fn from(s: NET_ShipState) -> ShipState {
        ShipState {
            pos: s.pos,
            orient: s.orient,
            vel: s.vel,
            game: s.game,
        }
    }
}

impl From<ShipState> for NET_ShipState {
    fn from(s: ShipState) -> NET_ShipState {
        NET_ShipState {
            pos: s.pos,
            orient: s.orient,
            vel: s.vel,
            game: s.game,
        }
    }
}

/// One event for the game (`NET_PollEvent`). Fields a type does not use are zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NET_Event {
    /// One of NET_EVENT_*.
    pub r#type: u32,
    /// The slot of the player the event is about or from; -1 when none.
    pub player_id: i32,
    /// Object id of creation and kill events.
    pub object_id: u32,
    /// Missile target id (0: none).
    pub target_id: u32,
    /// Object flags of NET_EVENT_CREATE_OBJECT.
    pub flags: u32,
    /// Object class (create object/laser/missile), extra index (create extra), particle type.
    pub object_class: u16,
    /// Game-defined type of NET_EVENT_CUSTOM.
    pub custom_type: u16,
    /// Position (creations; origin of particle objects).
    pub pos: [f32; 3],
    /// Direction (laser, missile).
    pub dir: [f32; 3],
    /// Orientation quaternion (create object).
    pub orient: [f32; 4],
    /// List id of NET_EVENT_KILL_OBJECT; unjoin flag of NET_EVENT_PLAYER_UNJOINED.
    pub list_id: u8,
    pub reserved: [u8; 3],
    /// NUL-terminated: chat text, player name, or what went wrong (error, disconnect reason).
    pub text: [c_char; NET_EVENT_TEXT_LEN],
    /// Bytes of NET_EVENT_CUSTOM data.
    pub data_len: u32,
    pub data: [u8; NET_EVENT_DATA_LEN],
}

impl NET_Event {
    fn empty(kind: u32, player_id: i32) -> NET_Event {
        NET_Event {
            r#type: kind,
            player_id,
            object_id: 0,
            target_id: 0,
            flags: 0,
            object_class: 0,
            custom_type: 0,
            pos: [0.0; 3],
            dir: [0.0; 3],
            orient: [0.0; 4],
            list_id: 0,
            reserved: [0; 3],
            text: [0; NET_EVENT_TEXT_LEN],
            data_len: 0,
            data: [0; NET_EVENT_DATA_LEN],
        }
    }

    fn with_text(mut self, text: &[u8]) -> NET_Event {
        let mut n = text.len().min(NET_EVENT_TEXT_LEN - 1);
        // Keep UTF-8 whole when the text had to be cut.
        while n > 0 && n < text.len() && (text[n] & 0xC0) == 0x80 {
            n -= 1;
        }
        for (dst, src) in self.text.iter_mut().zip(&text[..n]) {
            *dst = *src as c_char;
        }
        self.text[n] = 0;
        self
    }

    /// The C form of a game event.
    pub fn from_game_event(event: &GameEvent) -> NET_Event {
        let slot = |s: u8| i32::from(s);
        match event {
            GameEvent::Connected { slot: s } => NET_Event::empty(NET_EVENT_CONNECTED, slot(*s)),
            GameEvent::Disconnected { reason } => {
                NET_Event::empty(NET_EVENT_DISCONNECTED, -1).with_text(reason.as_bytes())
            }
            GameEvent::PlayerConnected { slot: s, name } => {
                NET_Event::empty(NET_EVENT_PLAYER_CONNECTED, slot(*s)).with_text(name.as_bytes())
            }
            GameEvent::PlayerDisconnected { slot: s, reason } => {
                NET_Event::empty(NET_EVENT_PLAYER_DISCONNECTED, slot(*s))
                    .with_text(reason.as_bytes())
            }
            GameEvent::PlayerJoined { slot: s } => {
                NET_Event::empty(NET_EVENT_PLAYER_JOINED, slot(*s))
            }
            GameEvent::PlayerUnjoined { slot: s, flag } => {
                let mut e = NET_Event::empty(NET_EVENT_PLAYER_UNJOINED, slot(*s));
                e.list_id = *flag;
                e
            }
            GameEvent::PlayerName { slot: s, name } => {
                NET_Event::empty(NET_EVENT_PLAYER_NAME, slot(*s)).with_text(name.as_bytes())
            }
            GameEvent::Error { text } => {
                NET_Event::empty(NET_EVENT_ERROR, -1).with_text(text.as_bytes())
            }
            // A server's message is text from nobody in the game.
            GameEvent::ServerMessage { text } => {
                NET_Event::empty(NET_EVENT_TEXT, -1).with_text(text.as_bytes())
            }
            GameEvent::Remote { slot: s, event } => Self::from_remote(slot(*s), event),
            GameEvent::ServerList { count, errors } => {
                let mut e =
                    NET_Event::empty(NET_EVENT_SERVER_LIST, -1).with_text(errors.as_bytes());
                e.object_id = *count;
                e
            }
        }
    }

    fn from_remote(player_id: i32, event: &RemoteEvent) -> NET_Event {
        match event {
            RemoteEvent::CreateObject {
                object_id,
                class,
                pos,
                orient,
                flags,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_CREATE_OBJECT, player_id);
                (e.object_id, e.object_class, e.pos, e.orient, e.flags) =
                    (*object_id, *class, *pos, *orient, *flags);
                e
            }
            RemoteEvent::CreateLaser {
                object_id,
                class,
                pos,
                dir,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_CREATE_LASER, player_id);
                (e.object_id, e.object_class, e.pos, e.dir) = (*object_id, *class, *pos, *dir);
                e
            }
            RemoteEvent::CreateMissile {
                object_id,
                class,
                pos,
                dir,
                target_id,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_CREATE_MISSILE, player_id);
                (e.object_id, e.object_class, e.pos, e.dir, e.target_id) =
                    (*object_id, *class, *pos, *dir, *target_id);
                e
            }
            RemoteEvent::CreateExtra {
                object_id,
                extra_index,
                pos,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_CREATE_EXTRA, player_id);
                (e.object_id, e.object_class, e.pos) = (*object_id, *extra_index, *pos);
                e
            }
            RemoteEvent::KillObject { object_id, list_id } => {
                let mut e = NET_Event::empty(NET_EVENT_KILL_OBJECT, player_id);
                (e.object_id, e.list_id) = (*object_id, *list_id);
                e
            }
            RemoteEvent::SendText(text) => {
                NET_Event::empty(NET_EVENT_TEXT, player_id).with_text(text.as_bytes())
            }
            RemoteEvent::PlayerName(name) => {
                NET_Event::empty(NET_EVENT_PLAYER_NAME, player_id).with_text(name.as_bytes())
            }
            RemoteEvent::ParticleObject {
                particle_type,
                origin,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_PARTICLE_OBJECT, player_id);
                (e.object_class, e.pos) = (*particle_type, *origin);
                e
            }
            RemoteEvent::Custom {
                custom_type,
                data,
                reliable,
            } => {
                let mut e = NET_Event::empty(NET_EVENT_CUSTOM, player_id);
                let bytes = data.as_bytes();
                e.custom_type = *custom_type;
                e.data_len = bytes.len() as u32;
                e.data[..bytes.len()].copy_from_slice(bytes);
                e.flags = if *reliable { NET_SEND_RELIABLE } else { 0 };
                e
            }
            // Protocol-internal events never reach the game; shown as an error if they did.
            RemoteEvent::PlayerList(_)
            | RemoteEvent::ConnectQueue(_)
            | RemoteEvent::PlayerStatus { .. }
            | RemoteEvent::Resume(_)
            | RemoteEvent::Rate(_)
            | RemoteEvent::Vacated { .. } => {
                NET_Event::empty(NET_EVENT_ERROR, player_id).with_text(b"internal event")
            }
        }
    }
}
