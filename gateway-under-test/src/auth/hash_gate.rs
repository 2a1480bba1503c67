//! The bound on concurrent password hashes (docs/gateway-contract.md §2.3): at most
//! `auth.max_concurrent_hashes` argon2 computations run at once, at most `auth.hash_queue`
//! more wait for one, and a hash past both is refused at once ([`HashBusy`], a 503 with
//! `Retry-After`).
//!
//! **Why.** Every login costs one hash (unknown e-mails too, against the dummy hash) and each
//! takes `auth.password_hash.memory_kib` (19 MiB) on a blocking thread; with no bound, 200
//! parallel logins with random e-mails took the gateway from 197 MB to over 5 GB. The permit moves
//! into the blocking task, so a client that goes away mid-hash cannot free its slot before the
//! hash (and its memory) is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A hash was refused: as many as allowed are running and as many as allowed are waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many password checks are running; try again shortly")]
pub struct HashBusy;

/// Why a gated hash did not produce its result.
#[derive(Debug, thiserror::Error)]
pub enum HashGateError {
    /// Refused by the bound.
    #[error(transparent)]
    Busy(#[from] HashBusy),
    /// The blocking task failed (it panicked).
    #[error("password hashing task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Bounds the password hashes of one gateway.
#[derive(Debug)]
pub struct HashGate {
    running: Arc<Semaphore>,
    /// Hashes waiting for a permit.
    waiting: AtomicUsize,
    /// How many may wait.
    queue: usize,
}

/// Takes a waiting hash out of the count however its wait ends (a permit, or the request was
/// dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HashGate {
    /// `concurrency` hashes at once (at least 1), `queue` waiting.
    pub fn new(concurrency: usize, queue: usize) -> HashGate {
        HashGate {
            running: Arc::new(Semaphore::new(concurrency.max(1))),
            waiting: AtomicUsize::new(0),
            queue,
        }
    }

    /// The configured concurrency, where `0` means one per available core.
    pub fn concurrency_for(configured: usize) -> usize {
        if configured > 0 {
            return configured;
        }
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    }

    /// A permit to hash once one is free, waiting in the queue if needed; [`HashBusy`] at once
    /// when the queue is full too.
    pub async fn acquire(&self) -> Result<HashPermit, HashBusy> {
        if let Ok(permit) = self.running.clone().try_acquire_owned() {
            return Ok(HashPermit { _permit: permit });
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(HashBusy);
        }
        let _waiting = Waiting(&self.waiting);
        // The semaphore is never closed, so acquiring only fails in theory.
        let permit = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| HashBusy)?;
        Ok(HashPermit { _permit: permit })
    }

    /// [`HashGate::acquire`], then [`HashPermit::run`].
    pub async fn run<T: Send + 'static>(
        &self,
        hash: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashGateError> {
        Ok(self.acquire().await?.run(hash).await?)
    }
}

/// The right to compute one hash.
#[derive(Debug)]
pub struct HashPermit {
    _permit: OwnedSemaphorePermit,
}

impl HashPermit {
    /// Runs `hash` on a blocking thread, holding the permit until it is done (even if the
    /// caller stops waiting).
    pub async fn run<T: Send + 'static>(
        self,
        hash: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        tokio::task::spawn_blocking(move || {
            let result = hash();
            drop(self);
            result
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Finding 2 of issue 21: one hash runs, one waits, the third is refused at once; once the
    /// running one ends, the waiting one runs.
    #[tokio::test]
    async fn parallel_logins_past_the_running_and_waiting_bound_are_refused() {
        let gate = Arc::new(HashGate::new(1, 1));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let running = tokio::spawn({
            let gate = gate.clone();
            async move { gate.run(move || released.recv().is_ok()).await }
        });
        while gate.running.available_permits() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.run(|| "waited").await }
        });
        while gate.waiting.load(Ordering::Acquire) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(matches!(
            gate.run(|| "refused").await,
            Err(HashGateError::Busy(HashBusy))
        ));
        release.send(()).expect("the running hash waits for this");
        assert!(running.await.expect("task").expect("ran"));
        assert_eq!(waiting.await.expect("task").expect("ran"), "waited");
        assert_eq!(gate.waiting.load(Ordering::Acquire), 0);
    }

    #[test]
    fn zero_concurrency_means_one_per_core() {
        assert!(HashGate::concurrency_for(0) >= 1);
        assert_eq!(HashGate::concurrency_for(3), 3);
    }
}
