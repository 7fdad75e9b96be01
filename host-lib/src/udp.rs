//! What the UDP roles share: sockets with the buffers a bursty card needs,
//! waits with deadlines, and the MAC address of the interface that holds an
//! IP address (the card sends its host's frames to that MAC).

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Receive buffer the roles ask for: a flush sends the card's whole table
/// in a burst, and a lost record frame fails the job.
const RCVBUF: libc::c_int = 8 << 20;

/// Bind a UDP socket at `addr` with a large receive buffer.
pub fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    // A smaller buffer than asked is not an error (the kernel caps it at
    // net.core.rmem_max), and neither is a refusal: the role still works.
    let _ = set_int_option(&s, libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF);
    Ok(s)
}

/// setsockopt of an `int` option.
fn set_int_option(
    s: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: setsockopt on a socket this process owns, with a pointer to a
    // live c_int and its size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Mark every datagram `s` sends with traffic class `class` (0..=7): the
/// DSCP class selector CS`class` (RFC 2474), the IP TOS byte `class << 5`,
/// which switches map to their strict-priority queues. Fails on a class
/// above 7 or when the kernel refuses the option.
pub fn set_traffic_class(s: &UdpSocket, class: u8) -> std::io::Result<()> {
    if class > 7 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("traffic class {class}: 0..=7"),
        ));
    }
    set_int_option(
        s,
        libc::IPPROTO_IP,
        libc::IP_TOS,
        (class as libc::c_int) << 5,
    )
}

/// The traffic class `s` marks its datagrams with (see
/// [`set_traffic_class`]), read back from the kernel.
pub fn traffic_class(s: &UdpSocket) -> std::io::Result<u8> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt on a socket this process owns into a live c_int,
    // with its size.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(((v >> 5) & 7) as u8)
}

/// Receive one datagram, waiting until `deadline` at most; `None` at the
/// deadline.
pub fn recv_until(
    s: &UdpSocket,
    buf: &mut [u8],
    deadline: Instant,
) -> std::io::Result<Option<(usize, SocketAddr)>> {
    let wait = deadline.saturating_duration_since(Instant::now());
    // A zero timeout means "block forever" to the socket API.
    s.set_read_timeout(Some(wait.max(Duration::from_micros(50))))?;
    match s.recv_from(buf) {
        Ok(r) => Ok(Some(r)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The name of the interface that has IPv4 address `ip`.
pub fn interface_of(ip: Ipv4Addr) -> Option<String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list freed below; every node
    // is read only while the list is alive, and `ifa_addr` is checked for
    // null and for AF_INET before it is read as a sockaddr_in.
    unsafe {
        if libc::getifaddrs(&mut head) != 0 {
            return None;
        }
        let mut found = None;
        let mut p = head;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                let sin = &*(a as *const libc::sockaddr_in);
                if Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == ip {
                    found = Some(
                        std::ffi::CStr::from_ptr((*p).ifa_name)
                            .to_string_lossy()
                            .into_owned(),
                    );
                    break;
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(head);
        found
    }
}

/// The MAC address of interface `name`, from sysfs.
pub fn mac_of(name: &str) -> Option<[u8; 6]> {
    let s = std::fs::read_to_string(format!("/sys/class/net/{name}/address")).ok()?;
    parse_mac(s.trim())
}

/// Parse `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut parts = s.split(':');
    for b in m.iter_mut() {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_and_refuse() {
        assert_eq!(
            parse_mac("02:57:46:ff:00:01"),
            Some([2, 0x57, 0x46, 0xff, 0, 1])
        );
        for bad in [
            "",
            "02:57:46:ff:00",
            "02:57:46:ff:00:01:02",
            "2:57:46:ff:00:01",
            "zz:57:46:ff:00:01",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn traffic_classes_are_set_read_back_and_bounded() {
        let s = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        assert_eq!(traffic_class(&s).unwrap(), 0);
        for c in [7, 1, 5] {
            set_traffic_class(&s, c).unwrap();
            assert_eq!(traffic_class(&s).unwrap(), c);
        }
        let e = set_traffic_class(&s, 8).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert_eq!(
            traffic_class(&s).unwrap(),
            5,
            "a refused class changes nothing"
        );
    }

    #[test]
    fn loopback_is_found() {
        assert_eq!(interface_of(Ipv4Addr::LOCALHOST).as_deref(), Some("lo"));
        assert_eq!(interface_of(Ipv4Addr::new(192, 0, 2, 77)), None);
    }
}
