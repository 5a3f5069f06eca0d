//! Permits to send, handed out lowest order first (first come among
//! equals): a live model's requests are served in the run's report order,
//! so a trial already started (its next attempt) goes before one not yet
//! started, trials end in order, and a run's rows are written as it goes
//! rather than all at its end.

use std::collections::BinaryHeap;
use std::sync::Mutex;

use tokio::sync::oneshot;

/// At most `free` permits out at once.
#[derive(Debug)]
pub struct OrderedPermits {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    free: usize,
    waiting: BinaryHeap<Waiter>,
    arrivals: u64,
}

/// One waiter; the heap's greatest is the lowest order, then the earliest.
#[derive(Debug)]
struct Waiter {
    order: u64,
    arrival: u64,
    grant: oneshot::Sender<()>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        (self.order, self.arrival) == (other.order, other.arrival)
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.order, other.arrival).cmp(&(self.order, self.arrival))
    }
}

/// A permit out: given back when dropped.
#[derive(Debug)]
pub struct Permit<'a> {
    permits: &'a OrderedPermits,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.permits.release();
    }
}

/// A waiter's side while it waits: a grant that came to a waiter dropped
/// before it saw it is given back.
struct Pending<'a> {
    permits: &'a OrderedPermits,
    receiver: Option<oneshot::Receiver<()>>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(mut receiver) = self.receiver.take() {
            receiver.close();
            if receiver.try_recv().is_ok() {
                self.permits.release();
            }
        }
    }
}

impl OrderedPermits {
    pub fn new(permits: usize) -> Self {
        OrderedPermits {
            state: Mutex::new(State {
                free: permits,
                waiting: BinaryHeap::new(),
                arrivals: 0,
            }),
        }
    }

    /// A permit, once every waiter of a lower order (or of the same order
    /// and earlier) has had one.
    pub async fn acquire(&self, order: u64) -> Permit<'_> {
        let receiver = {
            let mut state = self.state.lock().expect("never poisoned");
            if state.free > 0 {
                state.free -= 1;
                return Permit { permits: self };
            }
            let (grant, receiver) = oneshot::channel();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.waiting.push(Waiter {
                order,
                arrival,
                grant,
            });
            receiver
        };
        let mut pending = Pending {
            permits: self,
            receiver: Some(receiver),
        };
        let granted = pending.receiver.as_mut().expect("set above").await;
        pending.receiver = None;
        granted.expect("a waiter is granted or dropped, never forgotten");
        Permit { permits: self }
    }

    /// Give a permit to the first waiter still waiting, or back to the pool.
    fn release(&self) {
        let mut state = self.state.lock().expect("never poisoned");
        while let Some(waiter) = state.waiting.pop() {
            if waiter.grant.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiters_are_served_lowest_order_first_then_first_come() {
        let permits = std::sync::Arc::new(OrderedPermits::new(1));
        let first = permits.acquire(5).await;
        let served = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (order, name) in [(9, "nine"), (2, "two-a"), (2, "two-b"), (4, "four")] {
            let (permits, served) = (permits.clone(), served.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = permits.acquire(order).await;
                served.lock().unwrap().push(name);
            }));
            // Each waits before the next arrives.
            tokio::task::yield_now().await;
        }
        drop(first);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*served.lock().unwrap(), ["two-a", "two-b", "four", "nine"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_dropped_after_its_grant_gives_the_permit_on() {
        let permits = OrderedPermits::new(1);
        let held = permits.acquire(0).await;
        let mut dropped = Box::pin(permits.acquire(1));
        // Polled once: it waits.
        assert!(futures_util::poll!(dropped.as_mut()).is_pending());
        drop(held);
        // Granted but never polled again, then dropped.
        drop(dropped);
        let again = tokio::time::timeout(std::time::Duration::from_secs(1), permits.acquire(2));
        assert!(again.await.is_ok(), "the permit was lost");
    }
}
