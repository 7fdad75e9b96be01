//! The async front of a key-value job.
//!
//! [`KvJob::open`] moves the card and a [`Daemon`] onto a blocking thread
//! (`tokio::task::spawn_blocking`: the simulation is CPU-bound and must not
//! hold up the async runtime). Tuples reach the daemon through a bounded
//! channel, so producers that outrun the simulation wait on `push`. The
//! daemon takes a message whenever it wants input
//! ([`Daemon::wants_input`]: a sender lacks a full packet) or has nothing
//! else to do, and otherwise keeps the card busy; no simulated time passes
//! while it waits. So one producer pushing in a fixed order gets the same
//! job, cycle for cycle, however fast it runs; producers in several tasks
//! interleave as the runtime schedules them.

use super::daemon::{Daemon, JobOutput, Poll};
use super::{JobOptions, KvError, Result, Stats};
use crate::card::Card;
use std::collections::HashMap;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Messages in flight to the daemon; a small bound is enough, since each
/// carries a batch.
const CHANNEL: usize = 64;

enum Msg {
    Tuples(usize, Vec<(u32, i32)>),
    Finish,
}

/// A finished job.
pub struct Finished {
    /// Per-key sums, exact as `i64`.
    pub sums: HashMap<u32, i64>,
    /// Statistics.
    pub stats: Stats,
    /// The card, for the next job.
    pub card: Card,
}

/// A running key-value job.
pub struct KvJob {
    tx: mpsc::Sender<Msg>,
    workers: usize,
    daemon: JoinHandle<(Card, Result<JobOutput>)>,
}

/// One worker's handle: pushes tuples as that worker. Cheap to clone and
/// `Send`, so each worker can run in its own task.
#[derive(Clone)]
pub struct Worker {
    tx: mpsc::Sender<Msg>,
    id: usize,
}

impl Worker {
    /// This worker's id.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Push a batch of tuples. Waits while the daemon's channel is full.
    /// Fails with [`KvError::Closed`] once the daemon has stopped;
    /// [`KvJob::finish`] then reports why.
    pub async fn push(&self, tuples: Vec<(u32, i32)>) -> Result<()> {
        self.tx
            .send(Msg::Tuples(self.id, tuples))
            .await
            .map_err(|_| KvError::Closed)
    }
}

impl KvJob {
    /// Open a job on `card`: the daemon opens the job on the card (see
    /// [`Daemon::open`]) before this returns.
    pub async fn open(card: Card, opts: JobOptions) -> Result<Self> {
        opts.validate()?;
        let workers = opts.workers;
        let (tx, mut rx) = mpsc::channel(CHANNEL);
        let (ready_tx, ready_rx) = oneshot::channel();
        let daemon = tokio::task::spawn_blocking(move || {
            let r = serve(&card, opts, &mut rx, ready_tx);
            (card, r)
        });
        match ready_rx.await {
            Ok(Ok(())) => Ok(Self {
                tx,
                workers,
                daemon,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(KvError::Closed),
        }
    }

    /// Workers in the job.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// A handle that pushes as `worker`.
    pub fn worker(&self, worker: usize) -> Result<Worker> {
        if worker >= self.workers {
            return Err(KvError::Worker {
                worker,
                workers: self.workers,
            });
        }
        Ok(Worker {
            tx: self.tx.clone(),
            id: worker,
        })
    }

    /// Push a batch of tuples as `worker`.
    pub async fn push(&self, worker: usize, tuples: Vec<(u32, i32)>) -> Result<()> {
        self.worker(worker)?.push(tuples).await
    }

    /// No more tuples: send the rest, wait for every acknowledgement, flush
    /// the card and return the sums. Every push that completed before this
    /// call is included (a push still running in another task when
    /// `finish` is called may not be).
    pub async fn finish(self) -> Result<Finished> {
        // A closed channel means the daemon already stopped with an error,
        // which joining it reports.
        let _ = self.tx.send(Msg::Finish).await;
        let (card, r) = self.daemon.await.map_err(|_| KvError::Closed)?;
        let out = r?;
        Ok(Finished {
            sums: out.sums,
            stats: out.stats,
            card,
        })
    }
}

/// The daemon thread: open, then alternate between taking messages and
/// stepping the card until told to finish.
fn serve(
    card: &Card,
    opts: JobOptions,
    rx: &mut mpsc::Receiver<Msg>,
    ready: oneshot::Sender<Result<()>>,
) -> Result<JobOutput> {
    let mut d = match Daemon::open(card, opts) {
        Ok(d) => {
            let _ = ready.send(Ok(()));
            d
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return Err(KvError::Closed);
        }
    };
    let take = |d: &mut Daemon, m: Msg| -> Result<bool> {
        match m {
            Msg::Tuples(w, ts) => {
                for (k, v) in ts {
                    d.push(w, k, v)?;
                }
                Ok(false)
            }
            Msg::Finish => Ok(true),
        }
    };
    // Input is taken exactly when the daemon asks for it, one message at a
    // time, never opportunistically: what the card sees then depends on the
    // messages' order, not on how fast they arrive.
    loop {
        if d.wants_input() || d.step(card)? == Poll::Idle {
            match rx.blocking_recv() {
                Some(m) => {
                    if take(&mut d, m)? {
                        return d.finish(card);
                    }
                }
                // Every sender dropped without `finish`: abandon the job.
                None => return Err(KvError::Closed),
            }
        }
    }
}
