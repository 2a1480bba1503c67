//! The open connections of `serve` and what bounds them (docs/gateway-contract.md §0,
//! "Connections"): which connections are idle, how many one peer holds, and which one to close
//! when a bound is reached.
//!
//! **Why.** A bound on connections alone lets one client hold every slot: 520 sockets that
//! pipelined requests and never read their answers kept all 512 slots, so a fresh client was
//! never answered. Here
//!
//! - a connection is **idle** while no request is in flight on it (between requests, before the
//!   first byte, or halfway through a request's headers); a request is in flight from the moment
//!   its headers were read until its response body has been sent or dropped ([`InFlight`]);
//! - at `max_connections` the **oldest idle** connection is closed to make room
//!   ([`ConnectionTable::evict_oldest_idle`]), so idle and stalled sockets cannot keep a new
//!   client out; a busy one (a stream, a body being read) is never closed for this;
//! - one peer address holds at most `max_connections_per_client`; at that bound its own oldest
//!   idle connection is closed, and when none is idle the new connection is refused
//!   ([`ConnectionTable::admit`]). Peers in `auth.trusted_proxies` are exempt: every user behind
//!   a proxy shares its address.
//!
//! The table belongs to one `serve` loop (no process-wide state); the loop is its only writer
//! of new entries, and a connection's [`Connection`] handle takes its entry out when it closes.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio_util::sync::CancellationToken;

use crate::auth::is_trusted_proxy;

/// One open connection in the table.
#[derive(Debug)]
struct Entry {
    /// The peer's address (canonical: an IPv4-mapped address counts as IPv4).
    peer: IpAddr,
    /// Requests in flight on it.
    in_flight: Arc<AtomicUsize>,
    /// Cancelled to close it.
    close: CancellationToken,
}

impl Entry {
    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }
}

/// The open connections of one server, oldest first.
#[derive(Debug)]
pub(crate) struct ConnectionTable {
    /// By connection number; numbers grow, so the first entry is the oldest.
    entries: Mutex<BTreeMap<u64, Entry>>,
    /// The next connection number.
    next: AtomicU64,
    /// Connections one peer may hold (at least 1).
    per_client: usize,
    /// Peers exempt from `per_client`.
    trusted_proxies: Vec<String>,
}

/// The entry of an open connection; dropping it (the connection closed) takes it out of the
/// table.
#[derive(Debug)]
pub(crate) struct Connection {
    table: Arc<ConnectionTable>,
    id: u64,
    in_flight: Arc<AtomicUsize>,
    close: CancellationToken,
}

/// A request in flight on a connection; the connection is idle again once every such guard
/// has been dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionTable {
    /// An empty table letting one peer hold `per_client` connections (at least 1), except the
    /// peers in `trusted_proxies`.
    pub(crate) fn new(per_client: usize, trusted_proxies: Vec<String>) -> ConnectionTable {
        ConnectionTable {
            entries: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            per_client: per_client.max(1),
            trusted_proxies,
        }
    }

    /// Whether a new connection from `peer` may be served: yes while the peer holds fewer than
    /// `per_client` (or is a trusted proxy); at the bound its oldest idle connection is closed
    /// to make room, and when none is idle the answer is no.
    pub(crate) fn admit(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        if is_trusted_proxy(peer, &self.trusted_proxies) {
            return true;
        }
        let mut entries = self.lock();
        let held = entries.values().filter(|entry| entry.peer == peer).count();
        held < self.per_client || evict_first(&mut entries, |entry| entry.peer == peer)
    }

    /// Closes the oldest idle connection of any peer; false when every connection is busy.
    pub(crate) fn evict_oldest_idle(&self) -> bool {
        evict_first(&mut self.lock(), |_| true)
    }

    /// Enters a connection from `peer` that is being served.
    pub(crate) fn register(self: &Arc<Self>, peer: IpAddr) -> Connection {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let close = CancellationToken::new();
        self.lock().insert(
            id,
            Entry {
                peer: peer.to_canonical(),
                in_flight: in_flight.clone(),
                close: close.clone(),
            },
        );
        Connection {
            table: self.clone(),
            id,
            in_flight,
            close,
        }
    }

    /// Open connections, for tests.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    /// The map, even if a panicking thread poisoned the mutex: every update is one insert or
    /// remove, so it stays consistent.
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        crate::lock::unpoisoned(&self.entries)
    }
}

/// Closes the oldest idle entry that `pick` accepts and takes it out of the table (so it no
/// longer counts, although its socket closes a moment later); false when there is none.
fn evict_first(entries: &mut BTreeMap<u64, Entry>, pick: impl Fn(&Entry) -> bool) -> bool {
    let oldest = entries
        .iter()
        .find(|(_, entry)| pick(entry) && entry.idle())
        .map(|(id, _)| *id);
    match oldest.and_then(|id| entries.remove(&id)) {
        Some(entry) => {
            entry.close.cancel();
            true
        }
        None => false,
    }
}

impl Connection {
    /// Marks a request in flight until the guard is dropped.
    pub(crate) fn request(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.in_flight.clone())
    }

    /// Cancelled when the table closes this connection to make room.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.close
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.table.lock().remove(&self.id);
    }
}

pin_project! {
    /// A response body that keeps its request [`InFlight`] until it has been sent or dropped.
    pub(crate) struct TrackedBody<B> {
        #[pin]
        inner: B,
        in_flight: InFlight,
    }
}

impl<B> TrackedBody<B> {
    pub(crate) fn new(inner: B, in_flight: InFlight) -> TrackedBody<B> {
        TrackedBody { inner, in_flight }
    }
}

impl<B: Body> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn one_client_holding_every_slot_is_bounded_per_address() {
        let table = Arc::new(ConnectionTable::new(2, vec!["10.0.0.1".into()]));
        let a = ip("192.0.2.1");
        let first = table.register(a);
        let second = table.register(a);
        let (_busy_first, _busy_second) = (first.request(), second.request());
        assert!(
            !table.admit(a),
            "a third busy connection of one peer is refused"
        );
        assert!(table.admit(ip("192.0.2.2")), "another peer is admitted");
        assert!(table.admit(ip("::ffff:192.0.2.2")), "the same peer, mapped");
        let proxy = ip("10.0.0.1");
        let _behind_proxy: Vec<_> = (0..5).map(|_| table.register(proxy)).collect();
        assert!(table.admit(proxy), "a trusted proxy is exempt");
    }

    #[test]
    fn one_client_holding_every_slot_loses_its_oldest_idle_connection_first() {
        let table = Arc::new(ConnectionTable::new(2, Vec::new()));
        let a = ip("192.0.2.1");
        let oldest = table.register(a);
        let newer = table.register(a);
        assert!(table.admit(a), "room made by closing an idle one");
        assert!(oldest.closed().is_cancelled(), "the oldest idle one went");
        assert!(!newer.closed().is_cancelled());
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn one_client_holding_every_slot_never_loses_a_busy_connection() {
        let table = Arc::new(ConnectionTable::new(8, Vec::new()));
        let busy = table.register(ip("192.0.2.1"));
        let in_flight = busy.request();
        let idle = table.register(ip("192.0.2.2"));
        assert!(table.evict_oldest_idle());
        assert!(!busy.closed().is_cancelled() && idle.closed().is_cancelled());
        assert!(!table.evict_oldest_idle(), "only a busy one is left");
        drop(in_flight);
        assert!(table.evict_oldest_idle(), "idle once its request ended");
        drop(busy);
        assert_eq!(table.len(), 0);
    }
}
