//! The console variables of a subsystem that are not tied to one backend: state send
//! frequency, receive rate, the server and masterservers to use, and the peer-to-peer timings.

use std::time::Duration;

use crate::error::{NetError, NetResult};
use crate::protocol::peer::PeerTimings;
use crate::session::SessionConfig;

/// Lowest and highest state send frequency (`net.sendfreq`), in Hz.
pub const SEND_HZ_RANGE: (u32, u32) = (5, 60);
/// Most masterservers (`net.master`), as Parsec allowed.
pub const MAX_MASTERS: usize = 3;

/// Settings changed with console commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSettings {
    /// State send frequency in Hz (5-60).
    pub send_hz: u32,
    /// Receive rate in bytes per second (0: unlimited).
    pub rate: u32,
    /// The slotserver or gameserver (`net.server HOST[:PORT]`).
    pub server: Option<String>,
    /// Masterservers (`net.master HOST[:PORT]`, up to 3).
    pub masters: Vec<String>,
    pub peer: PeerTimings,
    /// A remote silent this long is dropped.
    pub peer_timeout: Duration,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            send_hz: 20,
            rate: 0,
            server: None,
            masters: Vec::new(),
            peer: PeerTimings::default(),
            peer_timeout: Duration::from_secs(20),
        }
    }
}

impl NetSettings {
    /// The session configuration these settings give, for a backend carrying `max_payload`.
    pub fn session_config(&self, max_payload: usize) -> SessionConfig {
        SessionConfig {
            send_interval: Duration::from_secs(1) / self.send_hz.max(1),
            peer_timeout: self.peer_timeout,
            max_payload,
            receive_rate: self.rate,
            ..SessionConfig::default()
        }
    }

    pub fn set_send_hz(&mut self, hz: u32) -> NetResult<()> {
        let (lo, hi) = SEND_HZ_RANGE;
        if !(lo..=hi).contains(&hz) {
            return Err(NetError::invalid(format!(
                "{hz} Hz is outside {lo}-{hi} Hz"
            )));
        }
        self.send_hz = hz;
        Ok(())
    }
}
