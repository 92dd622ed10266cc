//! One readable line per game event, as the console shows them (chat, joins, errors, objects).

use net_core::master::format_table;
use std::collections::HashMap;

use net_core::rmev::{PlayerName, RemoteEvent};
use net_core::session::GameEvent;
use net_core::Subsystem;

/// The players' names as of the events printed so far: each event is shown with the name its
/// sender had when it happened, not with the one the player table has by the time it is printed
/// (a chat line followed by a rename in the same frame shows the old name). Kept from the
/// PlayerConnected and PlayerName events, in order; a slot no event named yet falls back to the
/// player table.
#[derive(Default)]
pub struct EventNames {
    names: HashMap<u8, PlayerName>,
}

impl EventNames {
    /// The console line for `event`, then what it says about names is noted.
    pub fn describe(&mut self, sub: &Subsystem, event: &GameEvent) -> String {
        let text = describe(sub, self, event);
        match event {
            GameEvent::PlayerConnected { slot, name } | GameEvent::PlayerName { slot, name } => {
                self.names.insert(*slot, *name);
            }
            GameEvent::PlayerDisconnected { slot, .. } => {
                self.names.remove(slot);
            }
            GameEvent::Disconnected { .. } => self.names.clear(),
            _ => {}
        }
        text
    }

    fn name(&self, sub: &Subsystem, slot: u8) -> Option<PlayerName> {
        self.names
            .get(&slot)
            .copied()
            .or_else(|| sub.player_name(slot))
    }

    fn who(&self, sub: &Subsystem, slot: u8) -> String {
        match self.name(sub, slot) {
            Some(name) => format!("{name} (player {slot})"),
            None => format!("player {slot}"),
        }
    }
}

fn pos(p: &[f32; 3]) -> String {
    format!("({:.1}, {:.1}, {:.1})", p[0], p[1], p[2])
}

/// The console line for an event, naming players as `names` has them.
fn describe(sub: &Subsystem, names: &EventNames, event: &GameEvent) -> String {
    match event {
        GameEvent::Connected { slot } => format!("* connected: you are player {slot}"),
        GameEvent::Disconnected { reason } => format!("* disconnected: {reason}"),
        GameEvent::PlayerConnected { slot, name } => format!("* {name} (player {slot}) connected"),
        GameEvent::PlayerDisconnected { slot, reason } => format!("* player {slot} left: {reason}"),
        GameEvent::PlayerJoined { slot } => format!("* {} joined the game", names.who(sub, *slot)),
        GameEvent::PlayerUnjoined { slot, flag } => {
            format!("* {} left the game (flag {flag})", names.who(sub, *slot))
        }
        GameEvent::PlayerName { slot, name } => format!("* player {slot} is called {name}"),
        GameEvent::Error { text } => format!("! {text}"),
        GameEvent::ServerMessage { text } => format!("[server] {text}"),
        // `servers` already showed the list it waited for (an empty line is not printed).
        GameEvent::ServerList { .. } if sub.server_list().shown_in_reply() => String::new(),
        GameEvent::ServerList { count, errors } => {
            let mut text = format!(
                "* server list: {count} server{}\n{}",
                if *count == 1 { "" } else { "s" },
                format_table(sub.server_list().servers())
            );
            if !errors.is_empty() {
                text.push_str(&format!("\n! {errors}"));
            }
            text
        }
        GameEvent::Remote { slot, event } => {
            let from = names.who(sub, *slot);
            match event {
                RemoteEvent::SendText(text) => format!(
                    "<{}> {text}",
                    names
                        .name(sub, *slot)
                        .map_or(from.clone(), |n| n.to_string())
                ),
                RemoteEvent::CreateObject {
                    object_id,
                    class,
                    pos: p,
                    ..
                } => {
                    format!(
                        "* {from} created object {object_id} (class {class}) at {}",
                        pos(p)
                    )
                }
                RemoteEvent::CreateLaser {
                    object_id, pos: p, ..
                } => format!("* {from} fired laser {object_id} at {}", pos(p)),
                RemoteEvent::CreateMissile {
                    object_id,
                    pos: p,
                    target_id,
                    ..
                } => {
                    format!(
                        "* {from} fired missile {object_id} at {} (target {target_id})",
                        pos(p)
                    )
                }
                RemoteEvent::CreateExtra {
                    object_id,
                    extra_index,
                    pos: p,
                } => {
                    format!(
                        "* {from} dropped extra {object_id} (kind {extra_index}) at {}",
                        pos(p)
                    )
                }
                RemoteEvent::KillObject { object_id, list_id } => {
                    format!("* {from} removed object {object_id} (list {list_id})")
                }
                RemoteEvent::ParticleObject {
                    particle_type,
                    origin,
                } => {
                    format!(
                        "* {from} made particle object {particle_type} at {}",
                        pos(origin)
                    )
                }
                RemoteEvent::Custom {
                    custom_type,
                    data,
                    reliable,
                } => format!(
                    "* {from} sent custom event {custom_type} ({} bytes, {})",
                    data.as_bytes().len(),
                    if *reliable { "reliable" } else { "unreliable" }
                ),
                other => format!("* {from}: {other:?}"),
            }
        }
    }
}
