//! Remote events and ship state: what the game creates (`NET_RmEv*`) and what other clients
//! replicate. Plain values with fixed-capacity strings; the two large payloads (chat text,
//! custom data) live in recycled blocks (`pooled_bytes`), so steady-state traffic needs no heap
//! allocation and events stay small to move. The wire encoding of these types is in `wire`; their validity rules are checked
//! by the constructors here and again by the decoder.

use std::fmt;

use crate::pooled_bytes::PooledBytes;
use crate::Node;

/// Most players any protocol seats (slots 0-15).
pub const MAX_SLOTS: usize = 16;
/// Longest player name in bytes.
pub const MAX_NAME_LEN: usize = 31;
/// Longest chat text in bytes.
pub const MAX_TEXT_LEN: usize = 255;
/// Largest custom event payload in bytes.
pub const MAX_CUSTOM_DATA: usize = 256;
/// Size of the opaque game area of a ship state.
pub const GAME_AREA_LEN: usize = 32;
/// Highest valid list id of RE_KILLOBJECT.
pub const MAX_LIST_ID: u8 = 15;

/// The sender's ship: sent with every packet while joined (unreliable, latest wins).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShipState {
    pub pos: [f32; 3],
    /// Orientation quaternion x, y, z, w.
    pub orient: [f32; 4],
    pub vel: [f32; 3],
    pub game: [u8; GAME_AREA_LEN],
}

impl Default for ShipState {
    fn default() -> Self {
        ShipState {
            pos: [0.0; 3],
            orient: [0.0, 0.0, 0.0, 1.0],
            vel: [0.0; 3],
            game: [0; GAME_AREA_LEN],
        }
    }
}

impl ShipState {
    /// All floats finite (what the decoder requires).
    pub fn is_finite(&self) -> bool {
        self.pos
            .iter()
            .chain(&self.orient)
            .chain(&self.vel)
            .all(|f| f.is_finite())
    }

    /// Whether `other` holds exactly the same bits. The state is carried bit for bit, so this is
    /// what "changed" means for it: `==` on its floats takes -0.0 for 0.0, and a state changing
    /// only in the sign of a zero would never be sent.
    /// It runs every frame (the game's own state is handed to the session each frame), so it
    /// compares fixed arrays, not chained iterators.
    pub fn same_bits(&self, other: &ShipState) -> bool {
        self.game == other.game
            && self.pos.map(f32::to_bits) == other.pos.map(f32::to_bits)
            && self.orient.map(f32::to_bits) == other.orient.map(f32::to_bits)
            && self.vel.map(f32::to_bits) == other.vel.map(f32::to_bits)
    }
}

/// Why a string is not acceptable as a name or text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextError {
    TooLong { len: usize, max: usize },
    ContainsNul,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::TooLong { len, max } => write!(f, "{len} bytes is longer than {max}"),
            TextError::ContainsNul => f.write_str("contains a NUL byte"),
        }
    }
}

/// A byte string of at most `N` bytes (N <= 255) with no NUL byte, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortText<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

/// A player name (at most 31 bytes).
pub type PlayerName = ShortText<MAX_NAME_LEN>;

/// Whether `bytes` may be a text of at most `max` bytes.
fn check_text(bytes: &[u8], max: usize) -> Result<(), TextError> {
    if bytes.len() > max {
        return Err(TextError::TooLong {
            len: bytes.len(),
            max,
        });
    }
    if bytes.contains(&0) {
        return Err(TextError::ContainsNul);
    }
    Ok(())
}

impl<const N: usize> ShortText<N> {
    pub fn new(bytes: &[u8]) -> Result<Self, TextError> {
        check_text(bytes, N)?;
        let mut out = ShortText {
            len: bytes.len() as u8,
            bytes: [0; N],
        };
        out.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(out)
    }

    pub fn empty() -> Self {
        ShortText {
            len: 0,
            bytes: [0; N],
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Lossy UTF-8 view for display.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<const N: usize> fmt::Debug for ShortText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

impl<const N: usize> fmt::Display for ShortText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl<const N: usize> Default for ShortText<N> {
    fn default() -> Self {
        Self::empty()
    }
}

/// A chat line (at most 255 bytes, no NUL byte).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ChatText(PooledBytes);

impl ChatText {
    pub fn new(bytes: &[u8]) -> Result<Self, TextError> {
        check_text(bytes, MAX_TEXT_LEN)?;
        // Within a block: MAX_TEXT_LEN < pooled_bytes::BLOCK_LEN.
        Ok(ChatText(PooledBytes::copy_of(bytes).unwrap_or_default()))
    }

    pub fn empty() -> Self {
        ChatText(PooledBytes::empty())
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Lossy UTF-8 view for display.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ChatText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

impl fmt::Display for ChatText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

/// Custom game-defined payload (at most 256 bytes).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CustomData(PooledBytes);

impl CustomData {
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > MAX_CUSTOM_DATA {
            return None;
        }
        PooledBytes::copy_of(bytes).map(CustomData)
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for CustomData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomData({} bytes)", self.0.len())
    }
}

/// One seat in the game as the peer-to-peer startup and slotserver distribute it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayerListEntry {
    pub slot: u8,
    pub joined: bool,
    /// The player's session token (non-zero).
    pub token: u32,
    pub node: Node,
    pub name: PlayerName,
}

/// A connect request a starting peer queued and forwards when it yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectRequest {
    pub token: u32,
    pub node: Node,
    pub name: PlayerName,
}

/// Up to 16 entries (RE_PLAYERLIST, RE_CONNECTQUEUE bodies).
pub type EntryList<T> = Vec<T>;

/// Event type numbers on the wire (see docs/wire-format.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EventType {
    CreateObject = 1,
    CreateLaser = 2,
    CreateMissile = 3,
    CreateExtra = 4,
    KillObject = 5,
    SendText = 6,
    PlayerName = 7,
    ParticleObject = 8,
    PlayerList = 9,
    ConnectQueue = 10,
    Custom = 11,
    PlayerStatus = 12,
    Resume = 13,
    Rate = 14,
    Vacated = 15,
}

impl EventType {
    pub fn from_u8(v: u8) -> Option<EventType> {
        Some(match v {
            1 => EventType::CreateObject,
            2 => EventType::CreateLaser,
            3 => EventType::CreateMissile,
            4 => EventType::CreateExtra,
            5 => EventType::KillObject,
            6 => EventType::SendText,
            7 => EventType::PlayerName,
            8 => EventType::ParticleObject,
            9 => EventType::PlayerList,
            10 => EventType::ConnectQueue,
            11 => EventType::Custom,
            12 => EventType::PlayerStatus,
            13 => EventType::Resume,
            14 => EventType::Rate,
            15 => EventType::Vacated,
            _ => return None,
        })
    }
}

/// A remote event of the design (RE_*), plus RE_CUSTOM.
#[derive(Clone, Debug, PartialEq)]
pub enum RemoteEvent {
    CreateObject {
        object_id: u32,
        class: u16,
        pos: [f32; 3],
        orient: [f32; 4],
        flags: u32,
    },
    CreateLaser {
        object_id: u32,
        class: u16,
        pos: [f32; 3],
        dir: [f32; 3],
    },
    CreateMissile {
        object_id: u32,
        class: u16,
        pos: [f32; 3],
        dir: [f32; 3],
        target_id: u32,
    },
    CreateExtra {
        object_id: u32,
        extra_index: u16,
        pos: [f32; 3],
    },
    KillObject {
        object_id: u32,
        list_id: u8,
    },
    SendText(ChatText),
    PlayerName(PlayerName),
    ParticleObject {
        particle_type: u16,
        origin: [f32; 3],
    },
    PlayerList(EntryList<PlayerListEntry>),
    ConnectQueue(EntryList<ConnectRequest>),
    Custom {
        custom_type: u16,
        data: CustomData,
        reliable: bool,
    },
    /// The sender joined (`joined`) or unjoined the game; `flag` is the game's unjoin reason
    /// (`NETs_Unjoin(flag)`). Sent reliably so joins and unjoins stay in order with the rest.
    PlayerStatus {
        joined: bool,
        flag: u8,
    },
    /// Picking up, on a new link, the event streams of an earlier one between the same two
    /// players (after a backend switch or a rejoin): see `session::resume`. Never given to the
    /// game.
    Resume(ResumeStep),
    /// The sender's receive rate (`net.rate`) in bytes per second (0: unlimited): whoever sends
    /// to it (a peer, the gameserver) holds ship states back so what it sends stays near the
    /// rate; events are never held back for it. Never given to the game.
    Rate(u32),
    /// Through a gameserver only: the relay's word, in the stream of the slot it names as
    /// origin, that the player seated there under the id `told` (the id the others' `add ip:`
    /// lines gave it; 0: whoever sits there) left. Everything that player said comes before it,
    /// so a client takes the player's departure from here, not from the TCP `remove ip:` line
    /// that may overtake those events. Never given to the game.
    Vacated {
        told: u32,
    },
}

/// Most earlier tokens a RE_RESUME hello lists.
pub const MAX_EARLIER_TOKENS: usize = 4;

/// The steps of RE_RESUME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeStep {
    /// "These were my tokens in earlier sessions (newest first)": sent once on every new link.
    Hello(EarlierTokens),
    /// One answer to a hello per parked stream of the answering side with the hello's sender:
    /// on that old link the hello's sender had token `yours` and the answering side `mine`,
    /// and `delivered` is the last reliable id of the hello sender's stream the answering side
    /// delivered to its game (0: none).
    Answer {
        yours: u32,
        mine: u32,
        delivered: u32,
    },
    /// The answers to a hello are complete.
    Done,
}

/// Up to [`MAX_EARLIER_TOKENS`] non-zero tokens, newest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EarlierTokens {
    len: u8,
    tokens: [u32; MAX_EARLIER_TOKENS],
}

impl EarlierTokens {
    /// The newest `MAX_EARLIER_TOKENS` of `tokens` (newest first); zeros are skipped.
    pub fn new(tokens: impl IntoIterator<Item = u32>) -> EarlierTokens {
        let mut list = EarlierTokens::default();
        for token in tokens.into_iter().filter(|t| *t != 0) {
            if usize::from(list.len) == MAX_EARLIER_TOKENS {
                break;
            }
            list.tokens[usize::from(list.len)] = token;
            list.len += 1;
        }
        list
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.tokens[..usize::from(self.len)]
    }
}

impl RemoteEvent {
    pub fn event_type(&self) -> EventType {
        match self {
            RemoteEvent::CreateObject { .. } => EventType::CreateObject,
            RemoteEvent::CreateLaser { .. } => EventType::CreateLaser,
            RemoteEvent::CreateMissile { .. } => EventType::CreateMissile,
            RemoteEvent::CreateExtra { .. } => EventType::CreateExtra,
            RemoteEvent::KillObject { .. } => EventType::KillObject,
            RemoteEvent::SendText(_) => EventType::SendText,
            RemoteEvent::PlayerName(_) => EventType::PlayerName,
            RemoteEvent::ParticleObject { .. } => EventType::ParticleObject,
            RemoteEvent::PlayerList(_) => EventType::PlayerList,
            RemoteEvent::ConnectQueue(_) => EventType::ConnectQueue,
            RemoteEvent::Custom { .. } => EventType::Custom,
            RemoteEvent::PlayerStatus { .. } => EventType::PlayerStatus,
            RemoteEvent::Resume(_) => EventType::Resume,
            RemoteEvent::Rate(_) => EventType::Rate,
            RemoteEvent::Vacated { .. } => EventType::Vacated,
        }
    }

    /// Whether the event must not be lost (retransmitted until acknowledged).
    pub fn is_reliable(&self) -> bool {
        match self {
            RemoteEvent::Custom { reliable, .. } => *reliable,
            _ => true,
        }
    }

    /// Time-critical events get the object's current position just before they are sent, and a
    /// gameserver forwards them before everything else.
    pub fn is_time_critical(&self) -> bool {
        matches!(
            self,
            RemoteEvent::CreateLaser { .. }
                | RemoteEvent::CreateMissile { .. }
                | RemoteEvent::CreateObject { .. }
        )
    }

    /// The object this event is about, if any (for NET_FetchOwner and position refresh).
    pub fn object_id(&self) -> Option<u32> {
        match self {
            RemoteEvent::CreateObject { object_id, .. }
            | RemoteEvent::CreateLaser { object_id, .. }
            | RemoteEvent::CreateMissile { object_id, .. }
            | RemoteEvent::CreateExtra { object_id, .. }
            | RemoteEvent::KillObject { object_id, .. } => Some(*object_id),
            _ => None,
        }
    }

    /// Replace the position of a time-critical event (position refresh before sending).
    pub fn set_position(&mut self, new_pos: [f32; 3]) {
        match self {
            RemoteEvent::CreateObject { pos, .. }
            | RemoteEvent::CreateLaser { pos, .. }
            | RemoteEvent::CreateMissile { pos, .. } => *pos = new_pos,
            _ => {}
        }
    }
}
