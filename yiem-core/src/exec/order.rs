//! The executor's order across its batches: a sequential call runs alone, while parallel calls run beside
//! each other ([`Order`]).
//!
//! It is a fair readers–writer lock (tokio's `RwLock`) with a fast lane in front for readers: while no
//! sequential call waits or runs, a parallel call takes its share with one atomic increment and gives it
//! back with one decrement — no waiter, no lock, which is what almost every call of an agent sees. A
//! sequential call first announces itself (so that every reader coming after it takes the slow lane and
//! queues behind it, in order), takes tokio's lock for writing, then waits until the readers already in the
//! fast lane have left.
//!
//! Why a reader in the fast lane never overlaps a writer: the reader increments `fast` and then reads
//! `writers`; the writer increments `writers` and then reads `fast`, all four `SeqCst`. In the single order
//! of `SeqCst` operations, either the reader's read of `writers` comes after the writer's increment (the
//! reader sees the writer and steps back into the slow lane), or it comes before it — and then so does the
//! reader's increment of `fast`, which the writer's later read of `fast` sees (the writer waits for the
//! reader to leave). A writer's own increment stays until its hold is dropped.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use tokio::sync::{Notify, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The order of one executor (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Order {
    /// Readers in the fast lane.
    fast: AtomicUsize,
    /// Sequential calls that wait or run.
    writers: AtomicUsize,
    /// Told when the last fast reader leaves while a writer is announced.
    drained: Notify,
    lock: RwLock<()>,
}

/// A parallel call's share of the order; given back when dropped.
pub(crate) enum Shared<'a> {
    Fast(&'a Order),
    // Held for its drop.
    #[allow(dead_code)]
    Slow(RwLockReadGuard<'a, ()>),
}

/// A sequential call's hold on the whole order; given back when dropped (its announcement first, then the
/// lock: fields drop in order).
pub(crate) struct Alone<'a> {
    _announced: Announced<'a>,
    _lock: RwLockWriteGuard<'a, ()>,
}

impl Order {
    /// A share for a parallel call: at once unless a sequential call waits or runs, else after it.
    pub(crate) async fn shared(&self) -> Shared<'_> {
        match self.try_fast() {
            Some(fast) => fast,
            None => self.slow().await,
        }
    }

    /// A share in the slow lane, behind every sequential call that waits or runs: for a caller whose
    /// [`try_fast`](Self::try_fast) just failed.
    pub(crate) async fn slow(&self) -> Shared<'_> {
        Shared::Slow(self.lock.read().await)
    }

    /// A share in the fast lane, if no sequential call waits or runs: what [`shared`](Self::shared) gives
    /// at once, without a future to await.
    pub(crate) fn try_fast(&self) -> Option<Shared<'_>> {
        self.fast.fetch_add(1, SeqCst);
        if self.writers.load(SeqCst) == 0 {
            return Some(Shared::Fast(self));
        }
        self.leave_fast();
        None
    }

    /// The whole order for a sequential call: after every call that holds a share or waits before it.
    pub(crate) async fn alone(&self) -> Alone<'_> {
        // Announced first; the announcement is withdrawn however this future or its hold ends.
        self.writers.fetch_add(1, SeqCst);
        let announced = Announced(self);
        let lock = self.lock.write().await;
        loop {
            let drained = self.drained.notified();
            let mut drained = std::pin::pin!(drained);
            // Registered before the count is read, so a reader leaving in between is not missed.
            drained.as_mut().enable();
            if self.fast.load(SeqCst) == 0 {
                break;
            }
            drained.await;
        }
        Alone {
            _announced: announced,
            _lock: lock,
        }
    }

    fn leave_fast(&self) {
        if self.fast.fetch_sub(1, SeqCst) == 1 && self.writers.load(SeqCst) > 0 {
            self.drained.notify_waiters();
        }
    }
}

impl Drop for Shared<'_> {
    fn drop(&mut self) {
        if let Shared::Fast(order) = self {
            order.leave_fast();
        }
    }
}

/// A writer's announcement, withdrawn when dropped: when the writer stops waiting (its future dropped) or
/// when its hold ends.
struct Announced<'a>(&'a Order);

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        self.0.writers.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::FutureExt;

    use super::*;

    #[test]
    fn a_writer_waits_for_fast_readers_and_later_readers_wait_for_the_writer() {
        let order = Order::default();
        let first = order.shared().now_or_never().expect("uncontended");
        assert!(matches!(first, Shared::Fast(_)));
        let mut writer = std::pin::pin!(order.alone());
        assert!((&mut writer).now_or_never().is_none(), "a reader is inside");
        // A reader coming after the announced writer queues behind it.
        let mut later = std::pin::pin!(order.shared());
        assert!(
            (&mut later).now_or_never().is_none(),
            "the writer came first"
        );
        drop(first);
        let alone = (&mut writer).now_or_never().expect("the last reader left");
        assert!((&mut later).now_or_never().is_none(), "the writer runs");
        drop(alone);
        let later = (&mut later).now_or_never().expect("the writer is done");
        assert!(matches!(later, Shared::Slow(_)));
        drop(later);
        // Back to the fast lane once no writer is announced.
        assert!(matches!(
            order.shared().now_or_never(),
            Some(Shared::Fast(_))
        ));
    }

    #[test]
    fn a_writer_that_stops_waiting_withdraws_its_announcement() {
        let order = Order::default();
        let reader = order.shared().now_or_never().unwrap();
        {
            let mut writer = std::pin::pin!(order.alone());
            assert!((&mut writer).now_or_never().is_none());
        }
        assert_eq!(order.writers.load(SeqCst), 0);
        drop(reader);
        assert!(matches!(
            order.shared().now_or_never(),
            Some(Shared::Fast(_))
        ));
        assert!(order.alone().now_or_never().is_some());
    }

    #[test]
    fn a_writer_cancelled_while_queued_behind_another_leaves_the_counts_right() {
        let order = Order::default();
        let first = order.alone().now_or_never().expect("uncontended");
        // A reader steps back into the slow lane and queues; a second writer queues too, then gives up.
        let mut reader = std::pin::pin!(order.shared());
        assert!((&mut reader).now_or_never().is_none());
        {
            let mut second = std::pin::pin!(order.alone());
            assert!((&mut second).now_or_never().is_none());
            assert_eq!(order.writers.load(SeqCst), 2);
        }
        assert_eq!(order.writers.load(SeqCst), 1, "the second writer withdrew");
        drop(first);
        assert_eq!(order.writers.load(SeqCst), 0);
        let reader = (&mut reader).now_or_never().expect("the writer is done");
        assert!(matches!(reader, Shared::Slow(_)));
        drop(reader);
        assert_eq!(order.fast.load(SeqCst), 0);
        assert!(matches!(
            order.shared().now_or_never(),
            Some(Shared::Fast(_))
        ));
        assert!(
            order.alone().now_or_never().is_some(),
            "nothing is left holding it"
        );
    }

    #[test]
    fn readers_and_writers_on_many_threads_never_overlap() {
        // Each writer checks that nobody else is inside; each reader that no writer is.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .unwrap();
        let order = Arc::new(Order::default());
        let inside = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
        runtime.block_on(async {
            let mut tasks = Vec::new();
            for task in 0..16 {
                let (order, inside) = (Arc::clone(&order), Arc::clone(&inside));
                tasks.push(tokio::spawn(async move {
                    for round in 0..500 {
                        if (task + round) % 11 == 0 {
                            // A writer or a reader that gives up after one try: its future is dropped,
                            // queued or not.
                            if round % 2 == 0 {
                                drop(order.alone().now_or_never());
                            } else {
                                drop(order.shared().now_or_never());
                            }
                        } else if (task + round) % 7 == 0 {
                            let _alone = order.alone().await;
                            assert_eq!(inside.1.fetch_add(1, SeqCst), 0, "two writers");
                            assert_eq!(inside.0.load(SeqCst), 0, "a reader beside a writer");
                            tokio::task::yield_now().await;
                            inside.1.fetch_sub(1, SeqCst);
                        } else {
                            let _shared = order.shared().await;
                            inside.0.fetch_add(1, SeqCst);
                            assert_eq!(inside.1.load(SeqCst), 0, "a writer beside a reader");
                            tokio::task::yield_now().await;
                            inside.0.fetch_sub(1, SeqCst);
                        }
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
        });
        assert_eq!(order.fast.load(SeqCst), 0);
        assert_eq!(order.writers.load(SeqCst), 0);
    }
}
