//! One program per IPX address on a host: the claim an open socket holds on its interface,
//! network and socket number, like a UDP port a socket binds.
//!
//! A raw packet socket binds no address, so without a claim two programs on one host (one
//! network namespace) and one interface could open the same socket number: both would have the
//! same IPX node, each would take the frames sent to the other for its own, and a game would
//! split in two (each program seated in the same slot, the others seeing only one of them). A
//! claim is an abstract AF_UNIX datagram socket bound to a name made of the interface index,
//! the network and the socket number; abstract names belong to the network namespace and go
//! away with the last descriptor, so a program that dies frees its claims. Within one process
//! a claim is shared and counted (the core opens a trial socket while its own is open, and
//! tests run several instances in one process), so only other programs are refused.
//! When AF_UNIX cannot be used at all, the socket opens without a claim.

/// A held claim; released when dropped (the last holder in this process closes it).
#[derive(Debug)]
pub struct Claim {
    /// The key in `HELD`; `None` when nothing was claimed.
    #[cfg_attr(
        not(all(target_os = "linux", not(parsec_ipx_unsupported))),
        allow(dead_code)
    )]
    name: Option<String>,
}

/// The claims this process holds: key (the network namespace and the name), the socket that
/// holds it, how many sockets share it. Threads of one process may be in different network
/// namespaces (the tests open sockets in two), where the same name is a different claim.
#[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
static HELD: std::sync::Mutex<Vec<(String, std::os::unix::net::UnixDatagram, usize)>> =
    std::sync::Mutex::new(Vec::new());

/// The abstract socket name of an address.
pub fn name(interface_index: u32, network: [u8; 4], socket: u16) -> String {
    format!(
        "parsec-net-ipx/if{interface_index}/{:08X}/{socket:04X}",
        u32::from_be_bytes(network)
    )
}

/// Claim `name`. `Err(())` when another program holds it.
#[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
pub fn claim(name: String) -> Result<Claim, ()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};

    let namespace = std::fs::metadata("/proc/thread-self/ns/net").map_or(0, |m| m.ino());
    let key = format!("{namespace}:{name}");
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = held.iter_mut().find(|(k, _, _)| *k == key) {
        entry.2 += 1;
        return Ok(Claim { name: Some(key) });
    }
    let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
        return Ok(Claim { name: None });
    };
    match UnixDatagram::bind_addr(&addr) {
        Ok(socket) => {
            held.push((key.clone(), socket, 1));
            Ok(Claim { name: Some(key) })
        }
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(()),
        Err(_) => Ok(Claim { name: None }),
    }
}

#[cfg(not(all(target_os = "linux", not(parsec_ipx_unsupported))))]
pub fn claim(_name: String) -> Result<Claim, ()> {
    Ok(Claim { name: None })
}

impl Drop for Claim {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
        if let Some(name) = self.name.take() {
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = held.iter().position(|(n, _, _)| *n == name) {
                held[i].2 -= 1;
                if held[i].2 == 0 {
                    held.swap_remove(i);
                }
                if held.is_empty() {
                    // Free the list's buffer too: the core unloads this library when it
                    // switches away, and a static's heap buffer would outlive it as a leak.
                    *held = Vec::new();
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux", not(parsec_ipx_unsupported)))]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_shared_in_the_process_and_released_by_the_last() {
        let n = name(4_000_000_000, [0, 0, 0xab, 0xcd], 0x197e);
        assert!(n.ends_with("/0000ABCD/197E"), "{n}");
        let a = claim(n.clone()).expect("free");
        let b = claim(n.clone()).expect("shared in the process");
        drop(a);
        let held = |count: usize| {
            HELD.lock()
                .unwrap()
                .iter()
                .any(|(k, _, c)| k.ends_with(&format!(":{n}")) && *c == count)
        };
        assert!(held(1));
        drop(b);
        assert!(!held(1));
    }
}
