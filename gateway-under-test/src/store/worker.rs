//! The database thread: it owns the one `rusqlite::Connection` and runs the jobs that [`Store`]
//! handles send it, one at a time, in arrival order.
//!
//! Running every statement on one thread is what serialises writers (e.g. concurrent
//! `append_events` calls cannot race for the same `seq`) without any locking in async code.
//!
//! [`Store`]: super::Store

use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;

/// Work for the database thread; it reports its own result through a channel it captured.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle to the database thread. Cloning it is cheap; the thread stops once every clone has
/// been dropped.
#[derive(Debug, Clone)]
pub(super) struct DbThread {
    jobs: Sender<Job>,
}

impl DbThread {
    /// Moves `conn` onto a new thread. `dir` only labels a spawn failure.
    pub(super) fn spawn(conn: Connection, dir: &Path) -> Result<Self, StoreError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("store-sqlite".to_owned())
            .spawn(move || serve(conn, inbox))
            .map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(Self { jobs })
    }

    /// Runs `work` on the database thread and waits for its result without blocking the
    /// async runtime.
    pub(super) async fn call<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // The caller may have given up (its future was dropped); nobody needs the result then.
            let _ = reply.send(work(conn));
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `work` on the database thread and blocks the calling thread until it is done: for
    /// start-up steps of synchronous callers, never for request handling.
    pub(super) fn call_blocking<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = mpsc::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(work(conn));
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    /// A handle whose thread is already gone, to exercise the [`StoreError::Closed`] paths.
    #[cfg(test)]
    pub(super) fn stopped() -> Self {
        let (jobs, _) = mpsc::channel::<Job>();
        Self { jobs }
    }
}

/// The thread body. `recv` fails once every sender is dropped, which is the shutdown signal;
/// dropping the connection then closes the database cleanly.
fn serve(mut conn: Connection, inbox: Receiver<Job>) {
    while let Ok(job) = inbox.recv() {
        job(&mut conn);
    }
}
