//! The demo's servers, each running in a thread of the demo process on loopback: a masterserver
//! with its HTML server list, and a gameserver (slotserver core plus the relay) registered with
//! it. Stopped and joined when dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use net_core::master::{MasterConfig, MasterCore};
use net_core::relay::service::RelayService;
use net_core::relay::{RelayConfig, RelayCore};
use net_core::server::runtime::UdpService;
use net_core::server::{
    run, run_core, BanList, BoundAddrs, RegistrationSettings, RunSummary, RuntimeConfig,
    SlotServerConfig, SlotServerCore,
};
use net_core::NetResult;

/// A server running in a thread.
pub struct ServerThread {
    pub addrs: BoundAddrs,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<NetResult<RunSummary>>>,
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

impl ServerThread {
    /// Run `serve(stop, ready)` in a thread and wait until it says where it listens.
    fn spawn(
        what: &str,
        serve: impl FnOnce(Arc<AtomicBool>, mpsc::Sender<BoundAddrs>) -> NetResult<RunSummary>
            + Send
            + 'static,
    ) -> Result<ServerThread, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::spawn(move || serve(thread_stop, tx));
        let addrs = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| format!("the {what} did not start"))?;
        Ok(ServerThread {
            addrs,
            stop,
            thread: Some(thread),
        })
    }

    /// A masterserver writing its server list as HTML to `html`.
    pub fn masterserver(html: PathBuf) -> Result<ServerThread, String> {
        let runtime = RuntimeConfig {
            http: Some(loopback()),
            html_file: Some(html),
            ..RuntimeConfig::new("masterserver", loopback())
        };
        Self::spawn("masterserver", move |stop, ready| {
            let core = MasterCore::new(MasterConfig::default());
            run_core(runtime, core, None, stop, move |addrs| {
                let _ = ready.send(addrs);
            })
        })
    }

    /// The gameserver "demo", registered with the masterserver at `master`, writing its player
    /// list as HTML to `html`.
    pub fn gameserver(html: PathBuf, master: SocketAddr) -> Result<ServerThread, String> {
        let config = SlotServerConfig {
            server_name: "demo".into(),
            ..SlotServerConfig::default()
        };
        let relay = RelayCore::new(RelayConfig {
            server_token: config.server_token,
            ..RelayConfig::default()
        });
        let runtime = RuntimeConfig {
            http: Some(loopback()),
            udp: Some(loopback()),
            html_file: Some(html),
            registration: Some(RegistrationSettings::new(vec![master.to_string()])),
            ..RuntimeConfig::new("gameserver", loopback())
        };
        Self::spawn("gameserver", move |stop, ready| {
            let udp: Box<dyn UdpService> = Box::new(RelayService::new(relay));
            let core = SlotServerCore::new(config, BanList::empty());
            run(runtime, core, Some(udp), stop, move |addrs| {
                let _ = ready.send(addrs);
            })
        })
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
