//! Which connection gives way when `serve` is full. Every open connection is
//! either *waiting* (it has not finished sending a request: its headers or
//! its body, or it sits idle between kept-alive requests) or *serving* (its
//! request is in hand and its answer, perhaps a long event stream, is being
//! written). Past the connection cap a newcomer makes room by closing the
//! connection that has waited longest; one address may hold at most
//! `max_waiting_per_address` waiting connections, its oldest giving way to
//! its next. A serving connection is never closed to make room: when every
//! connection serves, the newcomer is refused (503, `Retry-After`).
//!
//! A flood of slow connections therefore costs its sender its own oldest
//! sockets, not every other client its turn (docs/reliability.md).

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Longest a newcomer waits for the connection it shed to close.
const ROOM_WAIT: Duration = Duration::from_secs(1);
/// Shortest time between two log lines counting shed connections.
const REPORT_EVERY: Duration = Duration::from_secs(1);

const WAITING: u8 = 0;
const SERVING: u8 = 1;
const SHED: u8 = 2;

/// The open connections of one listener, and the cap they share.
#[derive(Debug)]
pub(super) struct Connections {
    permits: Arc<Semaphore>,
    max: usize,
    max_waiting_per_address: usize,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    epoch: Instant,
    shed: Arc<ShedCount>,
}

/// Every connection is serving: the newcomer is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Full;

impl Connections {
    /// `max` connections open at once; at most `max_waiting_per_address`
    /// of them waiting from one address (at least 1).
    pub(super) fn new(max: usize, max_waiting_per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
            max_waiting_per_address: max_waiting_per_address.max(1),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
            shed: Arc::default(),
        })
    }

    /// The cap this listener was given.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Connections closed to make room so far.
    #[cfg(test)]
    fn shed_total(&self) -> u64 {
        self.shed.total.load(Ordering::Relaxed)
    }

    /// A place for a new connection from `peer`: at once while there is
    /// room, else once the longest-waiting connection (of `peer` first, when
    /// it holds its share) has closed; `Full` when every connection serves.
    pub(super) async fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Slot, Full> {
        {
            let mut open = self.lock();
            let own_waiting = open
                .values()
                .filter(|conn| conn.peer == peer && conn.state() == WAITING)
                .count();
            if own_waiting >= self.max_waiting_per_address {
                self.shed_oldest(&open, Some(peer));
            }
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => return Ok(self.register(&mut open, peer, permit)),
                Err(_) if !self.shed_oldest(&open, None) => return Err(Full),
                Err(_) => {}
            }
        }
        // Fair: the permit the shed connection gives back goes to the
        // first newcomer that waits for one.
        let permit = tokio::time::timeout(ROOM_WAIT, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| Full)?
            .map_err(|_| Full)?;
        Ok(self.register(&mut self.lock(), peer, permit))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(
        self: &Arc<Self>,
        open: &mut HashMap<u64, Arc<Conn>>,
        peer: IpAddr,
        permit: OwnedSemaphorePermit,
    ) -> Slot {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            peer,
            state: AtomicU8::new(WAITING),
            since_ms: AtomicU64::new(self.now_ms()),
            epoch: self.epoch,
            gone: Notify::new(),
        });
        open.insert(id, conn.clone());
        Slot {
            id,
            conn,
            owner: self.clone(),
            _permit: permit,
        }
    }

    /// Closes the connection that has waited longest (of `peer` only, when
    /// given); false when none waits.
    fn shed_oldest(&self, open: &HashMap<u64, Arc<Conn>>, peer: Option<IpAddr>) -> bool {
        let mut waiting: Vec<&Arc<Conn>> = open
            .values()
            .filter(|conn| peer.is_none_or(|peer| conn.peer == peer))
            .filter(|conn| conn.state() == WAITING)
            .collect();
        waiting.sort_by_key(|conn| conn.since_ms.load(Ordering::Relaxed));
        // One whose request completed since it was looked at is serving now
        // and stays; the next oldest goes instead.
        let Some(conn) = waiting.into_iter().find(|conn| {
            conn.state
                .compare_exchange(WAITING, SHED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        }) else {
            return false;
        };
        conn.gone.notify_one();
        let waited_ms = self
            .now_ms()
            .saturating_sub(conn.since_ms.load(Ordering::Relaxed));
        tracing::debug!(peer = %conn.peer, waited_ms, "connection shed to make room");
        self.shed.one();
        true
    }

    fn now_ms(&self) -> u64 {
        millis_since(self.epoch)
    }
}

/// Milliseconds since `epoch`: the resolution connections are ordered by.
fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One open connection's state, shared by its task and its bodies.
#[derive(Debug)]
pub(super) struct Conn {
    peer: IpAddr,
    state: AtomicU8,
    /// When it began waiting, in ms after `epoch`.
    since_ms: AtomicU64,
    epoch: Instant,
    gone: Notify,
}

impl Conn {
    fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Its request is in hand (the body's end read, or an answer begun).
    pub(super) fn serving(&self) {
        let _ = self
            .state
            .compare_exchange(WAITING, SERVING, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Its answer is written: it waits, from now, for its next request.
    pub(super) fn answered(&self) {
        self.since_ms
            .store(millis_since(self.epoch), Ordering::Relaxed);
        let _ = self
            .state
            .compare_exchange(SERVING, WAITING, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Resolves once the connection was shed; its task then drops it.
    pub(super) async fn shed(&self) {
        self.gone.notified().await;
    }
}

/// A connection's place under the cap, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    id: u64,
    conn: Arc<Conn>,
    owner: Arc<Connections>,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    /// The connection's state, for its task and its bodies.
    pub(super) fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.owner.lock().remove(&self.id);
    }
}

/// Counts shed connections; a log line at most every second says how many,
/// so a flood is visible without a line per socket.
#[derive(Debug, Default)]
struct ShedCount {
    total: AtomicU64,
    unreported: AtomicU64,
    report_pending: AtomicBool,
}

impl ShedCount {
    fn one(self: &Arc<Self>) {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.unreported.fetch_add(1, Ordering::Relaxed);
        if self.report_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        // The first shed of a burst is said at once, the rest a second later.
        self.report();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let count = self.clone();
                runtime.spawn(async move {
                    tokio::time::sleep(REPORT_EVERY).await;
                    count.report();
                    count.report_pending.store(false, Ordering::Release);
                });
            }
            Err(_) => self.report_pending.store(false, Ordering::Release),
        }
    }

    fn report(&self) {
        let shed = self.unreported.swap(0, Ordering::AcqRel);
        if shed > 0 {
            tracing::warn!(
                connections_shed = shed,
                connections_shed_total = self.total.load(Ordering::Relaxed),
                "closed connections that had not finished a request, to make room for new ones"
            );
        }
    }
}

/// A request's body, which marks its connection serving once its end has
/// been read: until then the request is not complete and its connection
/// may be shed like one that is still sending headers.
#[derive(Debug)]
pub(super) struct Received<B> {
    inner: B,
    conn: Arc<Conn>,
}

impl<B> Received<B> {
    pub(super) fn new(inner: B, conn: Arc<Conn>) -> Self
    where
        B: Body,
    {
        if inner.is_end_stream() {
            conn.serving();
        }
        Self { inner, conn }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Received<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.conn.serving(),
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.conn.serving(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response's body, whose end (written or dropped) leaves its connection
/// waiting for its next request, from that moment.
#[derive(Debug)]
pub(super) struct WatchedBody<B> {
    inner: B,
    conn: Arc<Conn>,
}

impl<B> WatchedBody<B> {
    /// The connection serves while this body is written.
    pub(super) fn new(inner: B, conn: Arc<Conn>) -> Self {
        conn.serving();
        Self { inner, conn }
    }
}

impl<B> Drop for WatchedBody<B> {
    fn drop(&mut self) {
        self.conn.answered();
    }
}

impl<B: Body + Unpin> Body for WatchedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
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

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    /// A few milliseconds, so that connections opened in turn are ordered
    /// (`since` has millisecond resolution).
    async fn apart() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    /// Admits from `peer`, then keeps each slot's connection task: a slot
    /// is dropped (its place given back) once its connection is shed.
    async fn open(
        connections: &Arc<Connections>,
        peer: IpAddr,
    ) -> (Arc<Conn>, tokio::task::JoinHandle<()>) {
        let slot = connections.admit(peer).await.expect("admitted");
        let conn = slot.conn().clone();
        let task = tokio::spawn(async move {
            slot.conn().shed().await;
            drop(slot);
        });
        (conn, task)
    }

    #[tokio::test]
    async fn past_the_cap_the_longest_waiting_connection_gives_way() {
        let connections = Connections::new(3, 100);
        let (first, first_task) = open(&connections, A).await;
        apart().await;
        let (second, _t2) = open(&connections, A).await;
        apart().await;
        let (third, _t3) = open(&connections, B).await;
        apart().await;
        // The oldest had been answered once: it waits from its answer on.
        first.serving();
        first.answered();
        let (_, _t4) = open(&connections, B).await;
        assert_eq!(second.state(), SHED, "the one waiting longest gave way");
        assert_eq!(first.state(), WAITING);
        assert_eq!(third.state(), WAITING);
        assert_eq!(connections.shed_total(), 1);
        assert!(!first_task.is_finished());
    }

    #[tokio::test]
    async fn a_serving_connection_is_never_shed_and_full_is_said() {
        let connections = Connections::new(2, 100);
        let (one, _t1) = open(&connections, A).await;
        let (two, _t2) = open(&connections, A).await;
        one.serving();
        two.serving();
        assert_eq!(connections.admit(B).await.unwrap_err(), Full);
        assert_eq!(connections.shed_total(), 0);
        // Its answer written, the connection waits again and may give way.
        one.answered();
        let (_, _t3) = open(&connections, B).await;
        assert_eq!(one.state(), SHED);
        assert_eq!(two.state(), SERVING);
    }

    #[tokio::test]
    async fn one_address_past_its_share_gives_way_to_itself() {
        let connections = Connections::new(10, 2);
        let (other, _t0) = open(&connections, B).await;
        apart().await;
        let (a1, _t1) = open(&connections, A).await;
        apart().await;
        let (a2, _t2) = open(&connections, A).await;
        apart().await;
        let (a3, _t3) = open(&connections, A).await;
        assert_eq!(a1.state(), SHED, "A's oldest made room for A's third");
        assert_eq!((a2.state(), a3.state()), (WAITING, WAITING));
        assert_eq!(other.state(), WAITING, "B's older connection stays");
    }

    #[tokio::test]
    async fn a_request_serves_once_its_body_is_read_and_waits_after_its_answer() {
        let connections = Connections::new(1, 100);
        let (conn, _t) = open(&connections, A).await;
        let chunks: Vec<Result<Frame<Bytes>, std::convert::Infallible>> =
            vec![Ok(Frame::data(Bytes::from_static(b"{}")))];
        let body = Received::new(
            http_body_util::StreamBody::new(futures_util::stream::iter(chunks)),
            conn.clone(),
        );
        assert_eq!(conn.state(), WAITING, "a body not yet read");
        let read = http_body_util::BodyExt::collect(body).await.unwrap();
        assert_eq!(read.to_bytes(), Bytes::from_static(b"{}"));
        assert_eq!(conn.state(), SERVING);
        let answer = WatchedBody::new(http_body_util::Empty::<Bytes>::new(), conn.clone());
        assert_eq!(conn.state(), SERVING);
        drop(answer);
        assert_eq!(conn.state(), WAITING);
        // An empty body is read as soon as it arrives.
        let _ = Received::new(http_body_util::Empty::<Bytes>::new(), conn.clone());
        assert_eq!(conn.state(), SERVING);
    }
}
