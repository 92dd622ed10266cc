//! The raw packet socket (Linux AF_PACKET, SOCK_RAW) that carries whole Ethernet frames: create,
//! bind to one interface for EtherType 0x8137, send a frame, receive a frame, wait until
//! readable. On other systems the same API exists but creating the socket fails with
//! `NET_BACKEND_ERR_UNSUPPORTED` (see PORTING.md).
//!
//! This module only moves bytes; it must never parse frames, keep counters, or block anywhere
//! but in [`RawSocket::wait_readable`].

#[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
pub use linux::RawSocket;
#[cfg(not(all(target_os = "linux", not(parsec_ipx_unsupported))))]
pub use unsupported::RawSocket;

/// One frame read from the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The frame's real length; larger than the buffer when it was cut short.
    pub len: usize,
    /// The kernel marked it as a frame this host sent (PACKET_OUTGOING).
    pub outgoing: bool,
}

#[cfg(all(target_os = "linux", not(parsec_ipx_unsupported)))]
mod linux {
    use std::io;
    use std::mem::{size_of, zeroed};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    use super::Received;
    use crate::frame::ETHERTYPE_IPX;
    use crate::oserr::{self, OpenError};

    /// A packet socket; frames arrive only after [`RawSocket::bind`].
    /// The receive queue a socket asks for (the kernel doubles it for its bookkeeping).
    const RECEIVE_QUEUE_BYTES: libc::c_int = 2 << 20;

    #[derive(Debug)]
    pub struct RawSocket {
        fd: OwnedFd,
        ifindex: libc::c_int,
    }

    fn link_address(ifindex: libc::c_int, dst_mac: Option<[u8; 6]>) -> libc::sockaddr_ll {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as libc::c_ushort;
        sll.sll_protocol = ETHERTYPE_IPX.to_be();
        sll.sll_ifindex = ifindex;
        if let Some(mac) = dst_mac {
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&mac);
        }
        sll
    }

    impl RawSocket {
        /// Create a non-blocking packet socket with protocol 0, which receives nothing until it
        /// is bound: frames of other interfaces never slip in between socket() and bind().
        pub fn create() -> Result<RawSocket, OpenError> {
            // SAFETY: plain system call with constant arguments.
            let fd = unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    0,
                )
            };
            if fd < 0 {
                return Err(oserr::socket_open_error(&io::Error::last_os_error()));
            }
            // SAFETY: `fd` is a freshly created descriptor owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            Ok(RawSocket { fd, ifindex: 0 })
        }

        /// Receive EtherType 0x8137 on interface `ifindex` only, and ask the kernel not to
        /// hand back frames this host sends (Linux 4.20+; older kernels mark them
        /// PACKET_OUTGOING, which the caller drops).
        pub fn bind(&mut self, ifindex: u32) -> io::Result<()> {
            let ifindex = libc::c_int::try_from(ifindex)
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            let sll = link_address(ifindex, None);
            // SAFETY: `sll` is a valid sockaddr_ll and the length is its size.
            let rc = unsafe {
                libc::bind(
                    self.fd.as_raw_fd(),
                    (&sll as *const libc::sockaddr_ll).cast(),
                    size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            self.ifindex = ifindex;
            self.enlarge_receive_queue();
            let one: libc::c_int = 1;
            // SAFETY: `one` is a c_int that outlives the call; the length is its size. Failure
            // (ENOPROTOOPT on old kernels) is harmless, see above.
            unsafe {
                libc::setsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    libc::PACKET_IGNORE_OUTGOING,
                    (&one as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            Ok(())
        }

        /// Send one complete Ethernet frame (header included) out of the bound interface.
        /// Ask for a receive queue of [`RECEIVE_QUEUE_BYTES`]: a game's reliable events leave in
        /// bursts of one frame each (hundreds at once), and the default queue (`rmem_default`,
        /// about 200 KiB) holds only about 170 frames, since each costs the kernel about
        /// 1.3 KiB on a veth (measured: `tests/bursts.rs`). `SO_RCVBUFFORCE` (CAP_NET_ADMIN, which root has) may pass
        /// `rmem_max`; otherwise `SO_RCVBUF` gets what `rmem_max` allows. A failure keeps the
        /// default: frames the queue cannot hold are still counted (`take_kernel_drops`).
        fn enlarge_receive_queue(&self) {
            let bytes: libc::c_int = RECEIVE_QUEUE_BYTES;
            for option in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
                let rc = unsafe {
                    libc::setsockopt(
                        self.fd.as_raw_fd(),
                        libc::SOL_SOCKET,
                        option,
                        (&bytes as *const libc::c_int).cast(),
                        size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                if rc == 0 {
                    return;
                }
            }
        }

        pub fn send(&self, frame: &[u8], dst_mac: [u8; 6]) -> io::Result<()> {
            let sll = link_address(self.ifindex, Some(dst_mac));
            loop {
                // SAFETY: `frame` is readable for its length; `sll` is a valid sockaddr_ll.
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
                if sent >= 0 {
                    return if sent as usize == frame.len() {
                        Ok(())
                    } else {
                        Err(io::Error::other("the kernel sent part of a frame"))
                    };
                }
                let err = io::Error::last_os_error();
                if !oserr::is_interrupted(&err) {
                    return Err(err);
                }
            }
        }

        /// Read one frame into `buf` without blocking; `None` if none is waiting. A frame
        /// longer than `buf` is cut short and reported with its real length.
        pub fn receive(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
            loop {
                // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
                let mut from: libc::sockaddr_ll = unsafe { zeroed() };
                let mut from_len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
                // SAFETY: `buf` is writable for its length; `from`/`from_len` describe a
                // writable sockaddr_ll.
                let got = unsafe {
                    libc::recvfrom(
                        self.fd.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        libc::MSG_TRUNC,
                        (&mut from as *mut libc::sockaddr_ll).cast(),
                        &mut from_len,
                    )
                };
                if got >= 0 {
                    return Ok(Some(Received {
                        len: got as usize,
                        outgoing: from.sll_pkttype == libc::PACKET_OUTGOING,
                    }));
                }
                let err = io::Error::last_os_error();
                if oserr::is_would_block(&err) {
                    return Ok(None);
                }
                if !oserr::is_interrupted(&err) {
                    return Err(err);
                }
            }
        }

        /// Frames the kernel dropped for this socket because its receive queue was full, since
        /// the previous call (reading resets the kernel's counter): `PACKET_STATISTICS`.
        pub fn take_kernel_drops(&self) -> io::Result<u64> {
            /// `PACKET_STATISTICS` of `<linux/if_packet.h>` (the libc crate does not have it).
            const PACKET_STATISTICS: libc::c_int = 6;
            let mut stats: libc::tpacket_stats = unsafe { zeroed() };
            let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
            let rc = unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    PACKET_STATISTICS,
                    (&mut stats as *mut libc::tpacket_stats).cast(),
                    &mut len,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(u64::from(stats.tp_drops))
        }

        /// Wait up to `timeout` until a frame (or an error) can be read.
        pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
            let deadline = Instant::now() + timeout;
            let mut left = timeout;
            loop {
                let mut fds = [libc::pollfd {
                    fd: self.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                // SAFETY: `fds` holds one initialised pollfd that outlives the call.
                let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, poll_timeout(left)) };
                if ready > 0 {
                    if fds[0].revents & libc::POLLNVAL != 0 {
                        return Err(io::Error::from_raw_os_error(libc::EBADF));
                    }
                    return Ok(true);
                }
                if ready == 0 {
                    return Ok(false);
                }
                let err = io::Error::last_os_error();
                if !oserr::is_interrupted(&err) {
                    return Err(err);
                }
                left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
            }
        }
    }

    /// A poll(2) timeout in milliseconds, rounded up so short waits do not become busy loops.
    fn poll_timeout(left: Duration) -> libc::c_int {
        let ms = left.as_micros().div_ceil(1000);
        ms.min(libc::c_int::MAX as u128) as libc::c_int
    }
}

#[cfg(not(all(target_os = "linux", not(parsec_ipx_unsupported))))]
mod unsupported {
    use std::convert::Infallible;
    use std::io;
    use std::time::Duration;

    use parsec_backend_abi::NET_BACKEND_ERR_UNSUPPORTED;

    use super::Received;
    use crate::oserr::{OpenError, NOT_SUPPORTED};

    /// Cannot exist on this system: [`RawSocket::create`] always fails.
    #[derive(Debug)]
    pub struct RawSocket {
        never: Infallible,
    }

    impl RawSocket {
        /// Always fails: this system has no Linux packet sockets.
        pub fn create() -> Result<RawSocket, OpenError> {
            Err(OpenError::new(NET_BACKEND_ERR_UNSUPPORTED, NOT_SUPPORTED))
        }

        /// Unreachable: no value of this type exists.
        pub fn bind(&mut self, _ifindex: u32) -> io::Result<()> {
            match self.never {}
        }

        /// Unreachable: no value of this type exists.
        pub fn send(&self, _frame: &[u8], _dst_mac: [u8; 6]) -> io::Result<()> {
            match self.never {}
        }

        /// Unreachable: no value of this type exists.
        pub fn receive(&self, _buf: &mut [u8]) -> io::Result<Option<Received>> {
            match self.never {}
        }

        /// Unreachable: no value of this type exists.
        pub fn take_kernel_drops(&self) -> io::Result<u64> {
            match self.never {}
        }

        /// Unreachable: no value of this type exists.
        pub fn wait_readable(&self, _timeout: Duration) -> io::Result<bool> {
            match self.never {}
        }
    }
}
