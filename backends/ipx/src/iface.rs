//! The network interfaces the backend can use: listing them with their index, MAC address and
//! flags (Linux: `getifaddrs`, whose AF_PACKET entries carry all three), and choosing the one to
//! bind (the configured name, or the first interface that is up, not loopback, and Ethernet).
//!
//! This module only looks; it must never change an interface (bring it up, set an address, enter
//! promiscuous mode) and never open a socket of its own beyond what `getifaddrs` does.

use parsec_backend_abi::{NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_UNREACHABLE};

use crate::oserr::OpenError;

/// One network interface as seen when the socket was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Name, e.g. `eth0`.
    pub name: String,
    /// Kernel interface index.
    pub index: u32,
    /// Hardware address (the IPX node); zero when not Ethernet.
    pub mac: [u8; 6],
    /// Administratively up (IFF_UP).
    pub up: bool,
    /// A loopback interface (IFF_LOOPBACK).
    pub loopback: bool,
    /// Hardware type Ethernet with a 6-byte address (veth, bridges, NICs, Wi-Fi).
    pub ethernet: bool,
}

impl Interface {
    fn usable_by_default(&self) -> bool {
        self.up && !self.loopback && self.ethernet
    }
}

fn names(list: &[Interface]) -> String {
    let usable: Vec<&str> = list
        .iter()
        .filter(|i| i.ethernet && !i.loopback)
        .map(|i| i.name.as_str())
        .collect();
    if usable.is_empty() {
        "none".to_string()
    } else {
        usable.join(", ")
    }
}

/// Pick the interface to bind from `list` (in kernel order): `wanted` by name, or the first that
/// is up, not loopback, and Ethernet.
pub fn choose(list: &[Interface], wanted: Option<&str>) -> Result<Interface, OpenError> {
    let Some(name) = wanted else {
        return list
            .iter()
            .find(|i| i.usable_by_default())
            .cloned()
            .ok_or_else(|| {
                OpenError::new(
                    NET_BACKEND_ERR_UNREACHABLE,
                    format!(
                        "ipx: no Ethernet interface is up (Ethernet interfaces: {}); \
                         choose one with net.ipx.interface",
                        names(list)
                    ),
                )
            });
    };
    let Some(found) = list.iter().find(|i| i.name == name) else {
        return Err(OpenError::new(
            NET_BACKEND_ERR_INVALID,
            format!(
                "ipx: there is no interface \"{name}\" (Ethernet interfaces: {}); \
                 check net.ipx.interface",
                names(list)
            ),
        ));
    };
    if found.loopback {
        return Err(OpenError::new(
            NET_BACKEND_ERR_INVALID,
            format!(
                "ipx: interface \"{name}\" is a loopback interface, not an Ethernet interface \
                 (its frames reach no other host); check net.ipx.interface"
            ),
        ));
    }
    if !found.ethernet {
        return Err(OpenError::new(
            NET_BACKEND_ERR_INVALID,
            format!(
                "ipx: interface \"{name}\" is not an Ethernet interface; check net.ipx.interface"
            ),
        ));
    }
    if !found.up {
        return Err(OpenError::new(
            NET_BACKEND_ERR_UNREACHABLE,
            format!("ipx: interface \"{name}\" is down; bring it up or choose another with net.ipx.interface"),
        ));
    }
    Ok(found.clone())
}

/// All interfaces of the calling thread's network namespace, in kernel order.
#[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
pub fn list() -> std::io::Result<Vec<Interface>> {
    use std::ffi::CStr;

    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid place for getifaddrs to store its list pointer.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut cursor = head;
    // SAFETY: `cursor` walks the list getifaddrs returned, which stays valid until freeifaddrs.
    while let Some(entry) = unsafe { cursor.as_ref() } {
        cursor = entry.ifa_next;
        // SAFETY: a non-NULL ifa_addr points to a sockaddr of at least its family's size.
        let family = unsafe { entry.ifa_addr.as_ref() }.map(|sa| sa.sa_family);
        if family != Some(libc::AF_PACKET as libc::sa_family_t) || entry.ifa_name.is_null() {
            continue;
        }
        // SAFETY: AF_PACKET entries carry a sockaddr_ll; read_unaligned tolerates any alignment.
        let ll = unsafe { entry.ifa_addr.cast::<libc::sockaddr_ll>().read_unaligned() };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(entry.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let flags = entry.ifa_flags;
        let ethernet = ll.sll_hatype == libc::ARPHRD_ETHER && ll.sll_halen == 6;
        let mut mac = [0u8; 6];
        if ethernet {
            mac.copy_from_slice(&ll.sll_addr[..6]);
        }
        found.push(Interface {
            name,
            index: u32::try_from(ll.sll_ifindex).unwrap_or(0),
            mac,
            up: flags & libc::IFF_UP as libc::c_uint != 0,
            loopback: flags & libc::IFF_LOOPBACK as libc::c_uint != 0,
            ethernet,
        });
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    found.retain(|i| i.index != 0);
    Ok(found)
}

/// Without Linux packet sockets there is nothing to list (open has failed before this).
#[cfg(not(all(target_os = "linux", not(parsec_ipx_unsupported))))]
pub fn list() -> std::io::Result<Vec<Interface>> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, index: u32, up: bool, loopback: bool, ethernet: bool) -> Interface {
        Interface {
            name: name.to_string(),
            index,
            mac: [2, 0, 0, 0, 0, index as u8],
            up,
            loopback,
            ethernet,
        }
    }

    fn sample() -> Vec<Interface> {
        vec![
            iface("lo", 1, true, true, false),
            iface("eth0", 2, false, false, true),
            iface("tun0", 3, true, false, false),
            iface("eth1", 4, true, false, true),
            iface("eth2", 5, true, false, true),
        ]
    }

    #[test]
    fn default_is_first_up_non_loopback_ethernet() {
        assert_eq!(choose(&sample(), None).unwrap().name, "eth1");
        let err = choose(&sample()[..3], None).unwrap_err();
        assert_eq!(err.code, NET_BACKEND_ERR_UNREACHABLE);
        assert!(err.message.contains("Ethernet interfaces: eth0"), "{err:?}");
        assert!(err.message.contains("net.ipx.interface"));
        let none = choose(&[], None).unwrap_err();
        assert!(
            none.message.contains("Ethernet interfaces: none"),
            "{none:?}"
        );
    }

    #[test]
    fn named_interface() {
        let list = sample();
        assert_eq!(choose(&list, Some("eth2")).unwrap().index, 5);
        let missing = choose(&list, Some("wlan0")).unwrap_err();
        assert_eq!(missing.code, NET_BACKEND_ERR_INVALID);
        assert!(
            missing.message.contains("no interface \"wlan0\""),
            "{missing:?}"
        );
        assert!(missing.message.contains("eth0, eth1, eth2"), "{missing:?}");
        for not_ethernet in ["lo", "tun0"] {
            let e = choose(&list, Some(not_ethernet)).unwrap_err();
            assert_eq!(e.code, NET_BACKEND_ERR_INVALID);
            assert!(e.message.contains("not an Ethernet interface"), "{e:?}");
            assert_eq!(
                e.message.contains("a loopback interface"),
                not_ethernet == "lo"
            );
        }
        let down = choose(&list, Some("eth0")).unwrap_err();
        assert_eq!(down.code, NET_BACKEND_ERR_UNREACHABLE);
        assert!(down.message.contains("is down"), "{down:?}");
    }

    #[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
    #[test]
    fn listing_finds_loopback() {
        let all = list().unwrap();
        let lo = all
            .iter()
            .find(|i| i.loopback)
            .expect("a loopback interface");
        assert!(!lo.ethernet && lo.index > 0, "{lo:?}");
    }
}
