//! [`TextServerCore`]: what the server runtime needs from a sans-IO text-protocol core, so one
//! runtime (`runtime.rs`) serves the slotserver, the gameserver and the masterserver.
//!
//! A core is driven as quinn-proto is: socket inputs (`accept`, `receive`, `closed`), timers
//! (`poll_timeout` / `handle_timeout`), outputs drained after every input (`poll_action`), and
//! what it publishes (`render_pages`). The slot/gameserver-only parts (bans, the UDP service's
//! roster, the player count told to masterservers) have defaults that do nothing.
//!
//! This module only defines the contract and implements it for [`SlotServerCore`] by delegating
//! to its own methods; it never does I/O and holds no state.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use super::bans::BanList;
use super::html;
use super::http::Pages;
use super::listing::ServerListing;
use super::refusal_log::RefusalLog;
use super::slots::{ConnId, RosterChange, ServerAction, SlotServerCore};

/// A text-protocol server core the runtime can drive.
pub trait TextServerCore {
    /// The name shown in logs ("Gamma Quadrant", "masterserver").
    fn display_name(&self) -> String;
    /// A new TCP connection; `Err(reason)`: refused (the runtime sends it
    /// [`refusal_line`](Self::refusal_line), if any, and closes it).
    fn accept(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) -> Result<(), String>;
    /// Bytes received on a connection.
    fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]);
    /// The connection is gone (closed by the peer or failed).
    fn closed(&mut self, now: Instant, conn: ConnId);
    /// The peer closed its sending side (`printf 'remove me\n' | nc -N`): its last lines are
    /// answered (one without its "\n" too), then it is gone as in [`closed`](Self::closed); the
    /// runtime delivers the replies before it closes the connection.
    fn input_ended(&mut self, now: Instant, conn: ConnId);
    /// Run timers (called once [`poll_timeout`](Self::poll_timeout) has come).
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next thing for the runtime to do.
    fn poll_action(&mut self) -> Option<ServerAction>;
    /// Graceful stop: close every connection after its queued lines.
    fn shutdown(&mut self, reason: &str);
    /// Everything counted since the start, by name.
    fn counters(&self) -> Vec<(&'static str, u64)>;
    /// The limiter of the core's refusal lines: the runtime logs its own refusals (a connection
    /// over a rate limit, a client that does not read) through it too, so one limit covers all
    /// of a server's refusal lines. Its summaries are the core's timers (`poll_timeout`).
    fn refusal_log(&mut self) -> &mut RefusalLog;
    /// The published HTML and JSON documents as of now. `kind` is the runtime's server kind,
    /// `status` extra status lines (a UDP service's figures); `running` is false for the pages
    /// written when the server stops, which say so.
    fn render_pages(
        &self,
        kind: &str,
        status: &[String],
        generated: SystemTime,
        running: bool,
    ) -> Pages;

    /// The line a connection refused by [`accept`](Self::accept) (a connection limit) gets
    /// before it is closed; `None`: closed without a reply.
    fn refusal_line(&self) -> Option<&'static str> {
        None
    }
    /// Replace the ban list (loaded from the runtime's ban file). Cores without bans refuse.
    fn set_bans(&mut self, _bans: BanList) -> Result<(), String> {
        Err("this server has no ban list".to_string())
    }
    /// The UDP game port, once bound (told to extended clients).
    fn set_udp_port(&mut self, _port: u16) {}
    /// The next change of the player list, for a UDP service.
    fn poll_roster_change(&mut self) -> Option<RosterChange> {
        None
    }
    /// Remove a player the UDP service found silent.
    fn remove_slot(&mut self, _now: Instant, _slot: u8, _reason: &str) {}
    /// The UDP service now hears the player in `slot` at another address.
    fn player_moved(&mut self, _slot: u8, _to: std::net::SocketAddr) {}
    /// `(players, max players)`, told to masterservers; `None` for a core without players.
    fn occupancy(&self) -> Option<(u16, u16)> {
        None
    }
}

impl TextServerCore for SlotServerCore {
    fn display_name(&self) -> String {
        self.config().server_name.clone()
    }
    fn accept(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) -> Result<(), String> {
        SlotServerCore::accept(self, now, conn, peer)
    }
    fn receive(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) {
        SlotServerCore::receive(self, now, conn, bytes)
    }
    fn closed(&mut self, now: Instant, conn: ConnId) {
        SlotServerCore::closed(self, now, conn)
    }
    fn input_ended(&mut self, now: Instant, conn: ConnId) {
        SlotServerCore::input_ended(self, now, conn)
    }
    fn handle_timeout(&mut self, now: Instant) {
        SlotServerCore::handle_timeout(self, now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        SlotServerCore::poll_timeout(self)
    }
    fn poll_action(&mut self) -> Option<ServerAction> {
        SlotServerCore::poll_action(self)
    }
    fn shutdown(&mut self, reason: &str) {
        SlotServerCore::shutdown(self, reason)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        SlotServerCore::counters(self)
    }
    fn refusal_log(&mut self) -> &mut RefusalLog {
        SlotServerCore::refusal_log(self)
    }
    fn render_pages(
        &self,
        kind: &str,
        status: &[String],
        generated: SystemTime,
        running: bool,
    ) -> Pages {
        let config = self.config();
        let listing = ServerListing {
            server_name: config.server_name.clone(),
            kind: kind.to_string(),
            max_players: config.max_players,
            players: self.players().cloned().collect(),
            generated,
            status: status.to_vec(),
            running,
        };
        Pages {
            html: html::render(&listing),
            json: listing.to_json(),
            stem: "players",
        }
    }
    fn set_bans(&mut self, bans: BanList) -> Result<(), String> {
        *self.bans_mut() = bans;
        Ok(())
    }
    fn set_udp_port(&mut self, port: u16) {
        SlotServerCore::set_udp_port(self, port)
    }
    fn poll_roster_change(&mut self) -> Option<RosterChange> {
        SlotServerCore::poll_roster_change(self)
    }
    fn remove_slot(&mut self, now: Instant, slot: u8, reason: &str) {
        SlotServerCore::remove_slot(self, now, slot, reason)
    }
    fn player_moved(&mut self, slot: u8, to: std::net::SocketAddr) {
        SlotServerCore::player_moved(self, slot, to)
    }
    fn occupancy(&self) -> Option<(u16, u16)> {
        Some((
            self.players().count() as u16,
            u16::from(self.config().max_players),
        ))
    }
}
