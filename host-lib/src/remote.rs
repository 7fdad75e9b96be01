//! A card's registers from another process: the control socket of
//! `weft card serve` and the `unix:PATH` device that talks to it.
//!
//! A served card (a simulated `weft_top` running free behind two TAP
//! netdevs) is one process; the roles that configure it — the key-value
//! collector, the gradient fallback, `weft status` — are others. They reach
//! its registers through a Unix stream socket with [`RemoteDevice`], which
//! implements the same [`Device`] trait as the simulated card and the VFIO
//! device, so the code above it is the code that drives a real card.
//!
//! The protocol is one request and one reply at a time (little-endian):
//!
//! | request (12 bytes) | reply (12 bytes, then `len` bytes of UTF-8) |
//! |---|---|
//! | `op` (1 read, 2 write, 3 info), 3 zero bytes, `addr: u32`, `value: u32` | `status` (0 ok, 1 error), 3 zero bytes, `value: u32`, `len: u32`, message |
//!
//! A read returns the register in `value`; info returns the register
//! window's length in `value` and the card's name as the message; an error
//! returns what the card said as the message. A malformed request closes
//! that connection only.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_driver::{Device, DmaBuffer};

const OP_READ: u8 = 1;
const OP_WRITE: u8 = 2;
const OP_INFO: u8 = 3;
const STATUS_OK: u8 = 0;
const STATUS_ERR: u8 = 1;
/// Longest message a reply may carry (a card's name or an error).
const MAX_MESSAGE: u32 = 4096;

fn os(device: &str, what: &str, source: std::io::Error) -> weft_driver::Error {
    weft_driver::Error::Os {
        device: device.to_string(),
        what: what.to_string(),
        source,
    }
}

/// A card's registers through a control socket.
pub struct RemoteDevice {
    name: String,
    bar_len: u64,
    path: PathBuf,
    conn: Mutex<UnixStream>,
}

impl RemoteDevice {
    /// Connect to the control socket at `path` and ask what is behind it.
    pub fn connect(path: &Path) -> weft_driver::Result<Self> {
        let label = format!("unix:{}", path.display());
        let conn = UnixStream::connect(path).map_err(|e| {
            os(
                &label,
                "connect to the card's control socket (is `weft card serve --control unix:PATH` running?)",
                e,
            )
        })?;
        // A served card answers between simulation steps; a request that
        // takes this long means the server is gone or wedged.
        let t = Some(Duration::from_secs(30));
        conn.set_read_timeout(t)
            .and_then(|_| conn.set_write_timeout(t))
            .map_err(|e| os(&label, "set socket timeouts", e))?;
        let dev = Self {
            name: label.clone(),
            bar_len: 0,
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        };
        let (len, card) = dev.call(OP_INFO, 0, 0)?;
        Ok(Self {
            name: format!("{label} ({card})"),
            bar_len: u64::from(len),
            ..dev
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn call(&self, op: u8, addr: u32, value: u32) -> weft_driver::Result<(u32, String)> {
        let mut req = [0u8; 12];
        req[0] = op;
        req[4..8].copy_from_slice(&addr.to_le_bytes());
        req[8..12].copy_from_slice(&value.to_le_bytes());
        // A poisoned lock only means another thread panicked mid-call; the
        // stream may be out of step, which the next reply's check catches.
        let mut c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        c.write_all(&req)
            .map_err(|e| os(&self.name, "send a request to the card server", e))?;
        let mut rep = [0u8; 12];
        c.read_exact(&mut rep)
            .map_err(|e| os(&self.name, "read the card server's reply", e))?;
        let v = u32::from_le_bytes([rep[4], rep[5], rep[6], rep[7]]);
        let len = u32::from_le_bytes([rep[8], rep[9], rep[10], rep[11]]);
        if len > MAX_MESSAGE || rep[0] > STATUS_ERR {
            return Err(weft_driver::Error::Unusable {
                device: self.name.clone(),
                why: format!(
                    "the card server sent a malformed reply (status {}, message of {len} bytes)",
                    rep[0]
                ),
            });
        }
        let mut msg = vec![0u8; len as usize];
        c.read_exact(&mut msg)
            .map_err(|e| os(&self.name, "read the card server's reply", e))?;
        let msg = String::from_utf8_lossy(&msg).into_owned();
        if rep[0] == STATUS_ERR {
            return Err(weft_driver::Error::Unusable {
                device: self.name.clone(),
                why: msg,
            });
        }
        Ok((v, msg))
    }
}

impl Device for RemoteDevice {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn bar_len(&self) -> u64 {
        self.bar_len
    }
    fn read32(&self, addr: u32) -> weft_driver::Result<u32> {
        Ok(self.call(OP_READ, addr, 0)?.0)
    }
    fn write32(&self, addr: u32, value: u32) -> weft_driver::Result<()> {
        self.call(OP_WRITE, addr, value).map(|_| ())
    }
    fn dma_alloc(&self, _len: usize) -> weft_driver::Result<Box<dyn DmaBuffer>> {
        Err(weft_driver::Error::Dma(format!(
            "{}: a served card has no DMA across its control socket (its frames are on its TAP netdevs)",
            self.name
        )))
    }
    fn wait_irq(&self, _vector: u32, _timeout: Duration) -> weft_driver::Result<bool> {
        Err(weft_driver::Error::Unusable {
            device: self.name.clone(),
            why: "a served card's interrupts do not cross its control socket".into(),
        })
    }
}

/// Serve `dev`'s registers on a Unix socket at `path` until `stop` is set:
/// one thread per connection, each request answered with the device's own
/// result. Returns once the listener is bound, with the thread that
/// accepts; a stale socket file at `path` is replaced.
pub fn serve(
    dev: Arc<dyn Device>,
    path: &Path,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    if path.exists() {
        // Only a socket is replaced: a regular file there is somebody's.
        use std::os::unix::fs::FileTypeExt;
        if std::fs::symlink_metadata(path)?.file_type().is_socket() {
            std::fs::remove_file(path)?;
        }
    }
    let listener = UnixListener::bind(path)?;
    listener.set_nonblocking(true)?;
    Ok(std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((conn, _)) => {
                    let dev = dev.clone();
                    let stop = stop.clone();
                    std::thread::spawn(move || answer(dev.as_ref(), conn, &stop));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }))
}

/// Answer one connection's requests until it closes, misbehaves or the
/// server stops.
fn answer(dev: &dyn Device, mut conn: UnixStream, stop: &AtomicBool) {
    if conn.set_nonblocking(false).is_err()
        || conn
            .set_read_timeout(Some(Duration::from_millis(200)))
            .is_err()
    {
        return;
    }
    let mut req = [0u8; 12];
    let mut have = 0;
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut req[have..]) {
            Ok(0) => return,
            Ok(n) => have += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        if have < req.len() {
            continue;
        }
        have = 0;
        let addr = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
        let value = u32::from_le_bytes([req[8], req[9], req[10], req[11]]);
        let r: Result<(u32, String), String> = match req[0] {
            OP_READ => dev.read32(addr).map(|v| (v, String::new())),
            OP_WRITE => dev.write32(addr, value).map(|_| (0, String::new())),
            OP_INFO => Ok((dev.bar_len().min(u32::MAX as u64) as u32, dev.name())),
            op => {
                let _ = reply(&mut conn, Err(format!("unknown request {op}")));
                return;
            }
        }
        .map_err(|e: weft_driver::Error| e.to_string());
        if reply(&mut conn, r).is_err() {
            return;
        }
    }
}

fn reply(conn: &mut UnixStream, r: Result<(u32, String), String>) -> std::io::Result<()> {
    let (status, value, msg) = match r {
        Ok((v, m)) => (STATUS_OK, v, m),
        Err(m) => (STATUS_ERR, 0, m),
    };
    let mut msg = msg.into_bytes();
    msg.truncate(MAX_MESSAGE as usize);
    let mut out = Vec::with_capacity(12 + msg.len());
    out.extend_from_slice(&[status, 0, 0, 0]);
    out.extend_from_slice(&value.to_le_bytes());
    out.extend_from_slice(&(msg.len() as u32).to_le_bytes());
    out.extend_from_slice(&msg);
    conn.write_all(&out)
}
