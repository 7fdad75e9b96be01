//! A MemOps client on a real network: transactions to a card's MemOps
//! port as UDP datagrams, completions back on the same socket.
//!
//! The card takes one transaction at a time end to end (`docs/wire.md`),
//! so the client keeps one request outstanding: it sends a request, waits
//! for its completion (matched by requester port and tag), then sends the
//! next. A request is **never retransmitted**: a write or an atomic add
//! that reached the card and lost its completion would be applied twice.
//! A request whose completion does not come within the timeout is reported
//! as lost, and the run stops there.

use super::run::{status_name, CompletionLine};
use crate::udp;
use crate::{Error, Result};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use weft_model::memops::{Op, Request, Status};
use weft_model::wire;

/// Send `reqs` one at a time to the card's MemOps port at `card` from a
/// socket bound at `bind`; every completion, in order.
pub fn send(
    card: SocketAddr,
    bind: SocketAddr,
    reqs: &[Request],
    timeout: Duration,
) -> Result<Vec<(u8, CompletionLine)>> {
    let io = |what: &str, e: std::io::Error| Error::Unsupported(format!("{what}: {e}"));
    let sock = udp::bind(bind).map_err(|e| io(&format!("udp {bind}"), e))?;
    let mut buf = vec![0u8; 2048];
    let mut out = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        sock.send_to(&wire::memops_request(r), card)
            .map_err(|e| io(&format!("udp to {card}"), e))?;
        let until = Instant::now() + timeout;
        let c = loop {
            let Some((n, from)) =
                udp::recv_until(&sock, &mut buf, until).map_err(|e| io("udp", e))?
            else {
                return Err(Error::Unsupported(format!(
                    "request {i} (port {} tag {}) got no completion from {card} within {timeout:?}; not resent (a write or add could apply twice); {} of {} completed",
                    r.src,
                    r.tag,
                    out.len(),
                    reqs.len()
                )));
            };
            let c = (from == card)
                .then(|| wire::parse_memops_completion(&buf[..n]))
                .flatten();
            if let Some(c) = c.filter(|c| c.dst == r.src && c.tag == r.tag) {
                break c;
            }
        };
        out.push((
            r.src,
            CompletionLine {
                tag: c.tag,
                status: status_name(c.status).into(),
                data: (c.status == Status::Ok && r.op == Op::Read)
                    .then(|| format!("{:016x}", c.data)),
            },
        ));
    }
    Ok(out)
}
