//! One readable line per game event, as the console shows them (chat, joins, errors, objects).

use net_core::master::format_table;
use net_core::rmev::RemoteEvent;
use net_core::session::GameEvent;
use net_core::Subsystem;

fn who(sub: &Subsystem, slot: u8) -> String {
    match sub.player_name(slot) {
        Some(name) => format!("{name} (player {slot})"),
        None => format!("player {slot}"),
    }
}

fn pos(p: &[f32; 3]) -> String {
    format!("({:.1}, {:.1}, {:.1})", p[0], p[1], p[2])
}

/// The console line for an event.
pub fn describe(sub: &Subsystem, event: &GameEvent) -> String {
    match event {
        GameEvent::Connected { slot } => format!("* connected: you are player {slot}"),
        GameEvent::Disconnected { reason } => format!("* disconnected: {reason}"),
        GameEvent::PlayerConnected { slot, name } => format!("* {name} (player {slot}) connected"),
        GameEvent::PlayerDisconnected { slot, reason } => format!("* player {slot} left: {reason}"),
        GameEvent::PlayerJoined { slot } => format!("* {} joined the game", who(sub, *slot)),
        GameEvent::PlayerUnjoined { slot, flag } => {
            format!("* {} left the game (flag {flag})", who(sub, *slot))
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
            let from = who(sub, *slot);
            match event {
                RemoteEvent::SendText(text) => format!(
                    "<{}> {text}",
                    sub.player_name(*slot)
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
