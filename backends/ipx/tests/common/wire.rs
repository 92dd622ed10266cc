//! Frames written byte by byte by the tests (independently of the backend's encoder), and an
//! injector: a plain AF_PACKET socket that puts arbitrary frames on an interface.

use std::ffi::CString;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One IPX endpoint as the tests write it.
#[derive(Clone, Copy, Debug)]
pub struct Addr {
    pub network: u32,
    pub node: [u8; 6],
    pub socket: u16,
}

/// An Ethernet II / IPX frame from `src` to `dst`, padded to 60 bytes. Tests corrupt it
/// afterwards (EtherType at 12..14, IPX length at 16..18, truncation).
pub fn ipx_frame(dst: Addr, src: Addr, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst.node);
    f.extend_from_slice(&src.node);
    f.extend_from_slice(&[0x81, 0x37]);
    f.extend_from_slice(&[0xff, 0xff]);
    f.extend_from_slice(&((30 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 4]);
    for a in [dst, src] {
        f.extend_from_slice(&a.network.to_be_bytes());
        f.extend_from_slice(&a.node);
        f.extend_from_slice(&a.socket.to_be_bytes());
    }
    f.extend_from_slice(payload);
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// Set the IPX length field of a frame built by [`ipx_frame`].
pub fn set_ipx_length(frame: &mut [u8], length: u16) {
    frame[16..18].copy_from_slice(&length.to_be_bytes());
}

/// A send-only raw packet socket on one interface (protocol 0: it receives nothing).
pub struct Injector {
    fd: OwnedFd,
    ifindex: libc::c_int,
}

impl Injector {
    /// Open on `ifname` of the calling thread's namespace (call inside `Netns::run`).
    pub fn open(ifname: &str) -> Injector {
        let name = CString::new(ifname).unwrap();
        // SAFETY: `name` is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        assert!(ifindex > 0, "no interface {ifname}");
        // SAFETY: plain system call with constant arguments.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        Injector {
            // SAFETY: `fd` is a fresh descriptor owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            ifindex: ifindex as libc::c_int,
        }
    }

    /// Put `frame` (Ethernet header included) on the wire as it is.
    pub fn send(&self, frame: &[u8]) {
        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as libc::c_ushort;
        sll.sll_ifindex = self.ifindex;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&frame[..6]);
        // SAFETY: `frame` is readable for its length and `sll` is a valid sockaddr_ll.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        assert_eq!(
            sent,
            frame.len() as isize,
            "inject {} bytes: {}",
            frame.len(),
            std::io::Error::last_os_error()
        );
    }
}
