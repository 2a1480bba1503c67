//! Locks that recover from poisoning, so that a panic on one task never turns into a panic on
//! every later request (the gateway never panics on a request).
//!
//! Recovering is sound only where every critical section leaves the data consistent at each
//! step, which is how the gateway's mutexes are used: each guarded update is a single insert,
//! removal, push or field assignment. A mutex that needs a multi-step invariant must not use
//! this.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the guard back from a poisoned lock instead of panicking.
pub(crate) fn unpoisoned<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_yields_its_data() {
        let mutex = Mutex::new(1);
        let poisoned = std::panic::catch_unwind(|| {
            let _guard = mutex.lock().unwrap();
            panic!("poison the lock");
        });
        assert!(poisoned.is_err() && mutex.is_poisoned());
        *unpoisoned(&mutex) += 1;
        assert_eq!(*unpoisoned(&mutex), 2);
    }
}
