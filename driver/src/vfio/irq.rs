//! Interrupt vectors on eventfds: VFIO signals vector `i` by adding 1 to
//! eventfd `i` (`VFIO_IRQ_SET_DATA_EVENTFD`, include/uapi/linux/vfio.h).
//!
//! Each vector keeps a count of interrupts read from its eventfd and not
//! yet consumed, so one wait consumes one interrupt whether it was taken
//! synchronously ([`Vectors::wait`], poll(2)) or asynchronously
//! ([`IrqWaiter::wait`], tokio's `AsyncFd`), and an interrupt that arrived
//! before the wait is returned at once.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One vector: its eventfd and the interrupts read but not consumed.
pub struct Vector {
    fd: OwnedFd,
    pending: Mutex<u64>,
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd(2) takes no pointers; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Vector {
    fn new() -> io::Result<Self> {
        Ok(Self {
            fd: eventfd()?,
            pending: Mutex::new(0),
        })
    }

    /// Read the eventfd's counter (non-blocking): the interrupts since the
    /// last read, 0 when there were none.
    fn drain(&self) -> io::Result<u64> {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v`, which is 8 bytes long; the fd is
        // an eventfd we own.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut v as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n == 8 {
            return Ok(v);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        }
    }

    /// Consume one interrupt if one is pending (reading the eventfd first).
    fn take(&self) -> io::Result<bool> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        *p += self.drain()?;
        if *p > 0 {
            *p -= 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Signal the eventfd as the kernel would (tests and doubles).
    pub fn signal(&self) -> io::Result<()> {
        let one = 1u64;
        // SAFETY: writes the 8 bytes of `one` to an eventfd we own.
        let n = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The vectors of one device.
pub struct Vectors {
    vectors: Vec<Arc<Vector>>,
}

impl Vectors {
    /// `n` fresh vectors.
    pub fn new(n: usize) -> io::Result<Self> {
        Ok(Self {
            vectors: (0..n)
                .map(|_| Vector::new().map(Arc::new))
                .collect::<io::Result<_>>()?,
        })
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The raw eventfds, to hand to `VFIO_DEVICE_SET_IRQS`.
    pub fn raw_fds(&self) -> Vec<RawFd> {
        self.vectors.iter().map(|v| v.fd.as_raw_fd()).collect()
    }

    /// Vector `i`.
    pub fn get(&self, i: usize) -> Option<&Arc<Vector>> {
        self.vectors.get(i)
    }

    /// Wait up to `timeout` for one interrupt on vector `i`.
    pub fn wait(&self, i: usize, timeout: Duration) -> io::Result<bool> {
        let Some(v) = self.vectors.get(i) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no such vector",
            ));
        };
        let deadline = Instant::now() + timeout;
        loop {
            if v.take()? {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let mut pfd = libc::pollfd {
                fd: v.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // Round up so a sub-millisecond timeout still waits.
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd, count 1.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// Waits for one vector's interrupts in async code (tokio, with I/O
/// enabled on the runtime).
pub struct IrqWaiter {
    vector: Arc<Vector>,
    afd: tokio::io::unix::AsyncFd<OwnedFd>,
}

impl IrqWaiter {
    /// A waiter on `vector` (it registers a duplicate of the eventfd with
    /// the current tokio runtime).
    pub fn new(vector: Arc<Vector>) -> io::Result<Self> {
        let dup = vector.fd.as_fd().try_clone_to_owned()?;
        // SAFETY: `dup` is an open descriptor owned by the `AsyncFd` from
        // here on; an `OwnedFd` always returns the same descriptor and
        // closes it only when dropped with the `AsyncFd`.
        let afd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(dup, tokio::io::Interest::READABLE)
        }
        .map_err(io::Error::from)?;
        Ok(Self { afd, vector })
    }

    /// Wait for the next interrupt (or return at once for a pending one).
    pub async fn wait(&self) -> io::Result<()> {
        loop {
            if self.vector.take()? {
                return Ok(());
            }
            let mut g = self.afd.readable().await?;
            // Readiness is edge-like in tokio: clear it, then `take` reads
            // the counter; an interrupt between the two sets it again.
            g.clear_ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_interrupt_once() {
        let v = Vectors::new(2).unwrap();
        assert!(!v.wait(0, Duration::from_millis(1)).unwrap());
        v.get(0).unwrap().signal().unwrap();
        v.get(0).unwrap().signal().unwrap();
        assert!(v.wait(0, Duration::ZERO).unwrap());
        assert!(v.wait(0, Duration::ZERO).unwrap());
        assert!(!v.wait(0, Duration::from_millis(2)).unwrap());
        assert!(!v.wait(1, Duration::ZERO).unwrap());
        assert!(v.wait(2, Duration::ZERO).is_err());
    }

    #[test]
    fn a_wait_returns_when_another_thread_signals() {
        let v = Arc::new(Vectors::new(1).unwrap());
        let s = v.get(0).unwrap().clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.signal().unwrap();
        });
        let t0 = Instant::now();
        assert!(v.wait(0, Duration::from_secs(5)).unwrap());
        assert!(t0.elapsed() < Duration::from_secs(4));
        t.join().unwrap();
    }

    #[tokio::test]
    async fn async_wait() {
        let v = Vectors::new(1).unwrap();
        let w = IrqWaiter::new(v.get(0).unwrap().clone()).unwrap();
        let s = v.get(0).unwrap().clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            s.signal().unwrap();
        });
        tokio::time::timeout(Duration::from_secs(5), w.wait())
            .await
            .expect("interrupt within 5 s")
            .unwrap();
        // Consumed: a synchronous wait now times out.
        assert!(!v.wait(0, Duration::from_millis(1)).unwrap());
    }
}
