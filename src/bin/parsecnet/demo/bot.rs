//! A demo bot: one `Subsystem` driven exactly as a game drives the library. It flies a
//! deterministic ship, fires lasers and missiles, sends numbered reliable custom events (so the
//! summary can show none was lost), chats, and runs scripted console lines at given times (the
//! protocol and backend switches).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use net_core::rmev::{ChatText, CustomData, RemoteEvent, ShipState};
use net_core::session::GameEvent;
use net_core::Subsystem;

/// The custom event type of the numbered reliable events.
const TRACKED_EVENT: u16 = 0x7E57;

/// A console line to run at a time after the start.
pub struct Scripted {
    pub at: Duration,
    pub line: String,
    /// What the summary calls this step ("protocol switch", ...), if it is one of the switches.
    pub milestone: Option<&'static str>,
}

/// What a bot did, for the status table and the summary.
#[derive(Clone, Debug, Default)]
pub struct BotStats {
    pub lasers: u64,
    pub missiles: u64,
    pub tracked_sent: u64,
    pub tracked_refused: u64,
    pub events_received: u64,
    pub out_of_order: u64,
    pub connects: u64,
    pub disconnects: u64,
    pub errors: Vec<String>,
    pub milestones: Vec<(&'static str, String)>,
}

pub struct Bot {
    pub name: String,
    index: u8,
    pub sub: Subsystem,
    start: Instant,
    script: VecDeque<Scripted>,
    next_fire: Duration,
    next_tracked: Duration,
    next_chat: Duration,
    object_id: u32,
    tracked_seq: u32,
    /// Highest tracked number received per sending bot.
    last_seen: BTreeMap<u8, u32>,
    /// Names of every other player ever seen.
    pub seen: Vec<String>,
    pub stats: BotStats,
    pub last_line: String,
    rate_mark: (Instant, u64, u64),
    pub packets_per_s: f64,
    pub events_per_s: f64,
    /// Servers in the last list fetched from the masterservers (`servers`), if one came.
    pub servers_found: Option<u32>,
    /// The bot asked for the server list (its scripted `servers` line ran).
    pub asked_servers: bool,
}

impl Bot {
    pub fn new(
        index: u8,
        name: &str,
        setup: &[String],
        script: Vec<Scripted>,
        start: Instant,
    ) -> Result<Bot, String> {
        let mut sub = Subsystem::new();
        for line in setup {
            let reply = sub.console_exec(line, Instant::now());
            if let Err(err) = reply.result {
                return Err(format!("{name}: '{line}': {err}"));
            }
        }
        Ok(Bot {
            name: name.to_string(),
            index,
            sub,
            start,
            script: script.into(),
            next_fire: Duration::from_millis(500 + 137 * u64::from(index)),
            next_tracked: Duration::from_millis(300),
            next_chat: Duration::from_secs(3 + u64::from(index)),
            object_id: u32::from(index) * 1_000_000 + 1,
            tracked_seq: 0,
            last_seen: BTreeMap::new(),
            seen: Vec::new(),
            stats: BotStats::default(),
            last_line: String::new(),
            rate_mark: (start, 0, 0),
            packets_per_s: 0.0,
            events_per_s: 0.0,
            servers_found: None,
            asked_servers: false,
        })
    }

    fn in_game(&self) -> bool {
        self.sub
            .protocol_module()
            .and_then(|p| p.session())
            .is_some()
    }

    /// The ship's position on its circle at time `t`.
    fn ship(&self, t: f32) -> ShipState {
        let i = f32::from(self.index);
        let angle = t * 0.4 + i * 1.57;
        let radius = 200.0 + 50.0 * i;
        let mut game = [0u8; 32];
        game[0] = self.index;
        ShipState {
            pos: [radius * angle.cos(), radius * angle.sin(), 10.0 * i],
            orient: [0.0, 0.0, (angle / 2.0).sin(), (angle / 2.0).cos()],
            vel: [-radius * 0.4 * angle.sin(), radius * 0.4 * angle.cos(), 0.0],
            game,
        }
    }

    fn send(&mut self, event: RemoteEvent) -> bool {
        self.sub.queue_remote_event(event).is_ok()
    }

    /// One frame: scripted lines, flying and firing, the library's frame, events.
    pub fn frame(&mut self, now: Instant, stop_firing: bool) {
        let t = now.saturating_duration_since(self.start);
        while self.script.front().is_some_and(|s| s.at <= t) {
            let step = self.script.pop_front().expect("front exists");
            let reply = self.sub.console_exec(&step.line, now);
            self.asked_servers |= step.line == "servers";
            self.last_line = format!(
                "{}: {}",
                step.line,
                reply.output.lines().next().unwrap_or("")
            );
            if let Some(name) = step.milestone {
                match &reply.result {
                    Ok(()) => self.stats.milestones.push((name, step.line.clone())),
                    Err(err) => self.stats.errors.push(format!("{}: {err}", step.line)),
                }
            }
        }
        if self.in_game() {
            let ship = self.ship(t.as_secs_f32());
            let _ = self.sub.set_local_state(ship);
            if !stop_firing {
                self.fire(t, &ship);
            }
        }
        self.sub.maintain(now);
        while let Some(event) = self.sub.poll_event() {
            self.take_event(event);
        }
        self.update_rates(now);
    }

    fn fire(&mut self, t: Duration, ship: &ShipState) {
        if t >= self.next_fire {
            self.next_fire = t + Duration::from_millis(400);
            self.object_id += 1;
            let laser = RemoteEvent::CreateLaser {
                object_id: self.object_id,
                class: 1,
                pos: ship.pos,
                dir: [ship.vel[0], ship.vel[1], 0.0],
            };
            if self.send(laser) {
                self.stats.lasers += 1;
            }
            if self.object_id.is_multiple_of(5) {
                self.object_id += 1;
                let missile = RemoteEvent::CreateMissile {
                    object_id: self.object_id,
                    class: 2,
                    pos: ship.pos,
                    dir: [1.0, 0.0, 0.0],
                    target_id: 0,
                };
                if self.send(missile) {
                    self.stats.missiles += 1;
                }
            }
        }
        if t >= self.next_tracked {
            self.next_tracked = t + Duration::from_millis(100);
            let mut data = [0u8; 5];
            data[0] = self.index;
            data[1..].copy_from_slice(&(self.tracked_seq + 1).to_be_bytes());
            let event = RemoteEvent::Custom {
                custom_type: TRACKED_EVENT,
                data: CustomData::new(&data).expect("5 bytes"),
                reliable: true,
            };
            if self.send(event) {
                self.tracked_seq += 1;
                self.stats.tracked_sent += 1;
            } else {
                self.stats.tracked_refused += 1;
            }
        }
        if t >= self.next_chat {
            self.next_chat = t + Duration::from_secs(7);
            let text = format!("{} here, {:.0} s in", self.name, t.as_secs_f32());
            if let Ok(text) = ChatText::new(text.as_bytes()) {
                self.send(RemoteEvent::SendText(text));
            }
        }
    }

    fn take_event(&mut self, event: GameEvent) {
        self.stats.events_received += 1;
        match &event {
            GameEvent::Connected { .. } => {
                self.stats.connects += 1;
                let _ = self.sub.join(Instant::now());
            }
            GameEvent::Disconnected { .. } => self.stats.disconnects += 1,
            GameEvent::PlayerConnected { name, .. } | GameEvent::PlayerName { name, .. } => {
                let name = name.to_string();
                if !self.seen.contains(&name) {
                    self.seen.push(name);
                }
            }
            GameEvent::Error { text } => self.stats.errors.push(text.clone()),
            GameEvent::ServerList { count, errors } => {
                self.servers_found = Some(*count);
                self.last_line = format!("server list: {count} servers {errors}");
            }
            GameEvent::Remote {
                event:
                    RemoteEvent::Custom {
                        custom_type: TRACKED_EVENT,
                        data,
                        ..
                    },
                ..
            } => {
                let bytes = data.as_bytes();
                if bytes.len() == 5 {
                    let sender = bytes[0];
                    let seq = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
                    let last = self.last_seen.entry(sender).or_insert(0);
                    if seq <= *last {
                        self.stats.out_of_order += 1;
                    }
                    *last = seq.max(*last);
                }
            }
            _ => {}
        }
        if let GameEvent::Remote {
            event: RemoteEvent::SendText(text),
            slot,
        } = &event
        {
            let who = self
                .sub
                .player_name(*slot)
                .map_or(format!("player {slot}"), |n| n.to_string());
            self.last_line = format!("<{who}> {text}");
        }
    }

    fn update_rates(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.rate_mark.0);
        if elapsed < Duration::from_secs(1) {
            return;
        }
        let packets = self.sub.packets().stats().datagrams_sent
            + self.sub.packets().stats().datagrams_received;
        let events = self.stats.events_received
            + self.stats.lasers
            + self.stats.missiles
            + self.stats.tracked_sent;
        let secs = elapsed.as_secs_f64();
        self.packets_per_s = (packets - self.rate_mark.1) as f64 / secs;
        self.events_per_s = (events - self.rate_mark.2) as f64 / secs;
        self.rate_mark = (now, packets, events);
    }

    /// Reliable events this bot queued that nobody has acknowledged yet.
    pub fn unacknowledged(&self) -> usize {
        self.sub
            .protocol_module()
            .and_then(|p| p.session())
            .map_or(0, |s| s.unacknowledged())
    }
}
