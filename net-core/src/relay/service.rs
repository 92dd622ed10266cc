//! The relay as the gameserver runtime's UDP service: players joining and leaving on the TCP
//! side become relay clients (at their address and announced game port, checked by their
//! token); silent clients are handed back so the TCP side frees their slots.

use std::net::SocketAddr;
use std::time::Instant;

use super::RelayCore;
use crate::server::runtime::UdpService;
use crate::server::RosterChange;

/// The relay behind the gameserver's UDP port.
pub struct RelayService {
    relay: RelayCore,
}

impl RelayService {
    pub fn new(relay: RelayCore) -> RelayService {
        RelayService { relay }
    }

    pub fn relay(&self) -> &RelayCore {
        &self.relay
    }
}

impl UdpService for RelayService {
    fn roster(&mut self, now: Instant, change: &RosterChange) {
        match change {
            RosterChange::Joined(player) => {
                let addr = SocketAddr::new(player.addr, player.game_port);
                self.relay
                    .add_client_told(now, player.slot, addr, player.token, player.told_token);
            }
            RosterChange::Left { slot, .. } => self.relay.remove_client(now, *slot),
            RosterChange::Renamed { .. } => {}
        }
    }

    fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        self.relay.handle_datagram(now, from, data);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        self.relay.poll_transmit(now, buf)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.relay.poll_timeout()
    }

    fn poll_silent(&mut self) -> Option<u8> {
        self.relay.poll_silent()
    }

    fn poll_moved(&mut self) -> Option<(u8, SocketAddr)> {
        self.relay.poll_moved()
    }

    fn status_lines(&self) -> Vec<String> {
        self.relay.status_lines()
    }
}
