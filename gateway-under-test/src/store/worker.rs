//! Where the store's statements run: the one `rusqlite::Connection` and the jobs that [`Store`]
//! handles give it, one at a time.
//!
//! - **A database file** gets a database thread of its own: jobs are sent to it and run in
//!   arrival order. A file's statement may wait on the disk (a sync, a full page cache), and that
//!   wait must never hold an async runtime thread.
//! - **A database in memory** (`database.backend = "memory"`) never waits on a disk, so its jobs
//!   run on the caller's own thread, one at a time behind a mutex. A round trip to a database
//!   thread (a wake of that thread, then a wake of the caller's runtime) cost 94 µs on a 2-core
//!   virtual machine, and a Layer 1 fixture makes 32 of them (issue 46); a statement on a
//!   database in memory takes a few.
//!
//! Either way one job runs at a time, which is what serialises writers (e.g. concurrent
//! `append_events` calls cannot race for the same `seq`) without any locking in async code.
//!
//! [`Store`]: super::Store

use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;

/// Work for the database thread; it reports its own result through a channel it captured.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle to the connection. Cloning it is cheap; the connection (and its thread, if it has
/// one) is closed once every clone has been dropped.
#[derive(Debug, Clone)]
pub(super) enum Db {
    /// A database file's thread, fed through this channel.
    Thread(Sender<Job>),
    /// A database in memory, used on the caller's thread.
    Inline(Arc<Mutex<Connection>>),
}

impl Db {
    /// Moves a database file's `conn` onto a new thread. `dir` only labels a spawn failure.
    pub(super) fn spawn(conn: Connection, dir: &Path) -> Result<Self, StoreError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("store-sqlite".to_owned())
            .spawn(move || serve(conn, inbox))
            .map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(Db::Thread(jobs))
    }

    /// Keeps a database in memory's `conn` for its callers' threads.
    pub(super) fn inline(conn: Connection) -> Self {
        Db::Inline(Arc::new(Mutex::new(conn)))
    }

    /// Runs `work` on the connection and returns its result without blocking the async runtime
    /// on a disk.
    pub(super) async fn call<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        match self {
            Db::Thread(jobs) => {
                let (reply, answer) = oneshot::channel();
                let job: Job = Box::new(move |conn| {
                    // The caller may have given up (its future was dropped); nobody needs the
                    // result then.
                    let _ = reply.send(work(conn));
                });
                jobs.send(job).map_err(|_| StoreError::Closed)?;
                answer.await.map_err(|_| StoreError::Closed)?
            }
            Db::Inline(conn) => run_inline(conn, work),
        }
    }

    /// Runs `work` on the connection and blocks the calling thread until it is done: for
    /// start-up steps of synchronous callers, never for request handling.
    pub(super) fn call_blocking<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        match self {
            Db::Thread(jobs) => {
                let (reply, answer) = mpsc::channel();
                let job: Job = Box::new(move |conn| {
                    let _ = reply.send(work(conn));
                });
                jobs.send(job).map_err(|_| StoreError::Closed)?;
                answer.recv().map_err(|_| StoreError::Closed)?
            }
            Db::Inline(conn) => run_inline(conn, work),
        }
    }

    /// A handle whose thread is already gone, to exercise the [`StoreError::Closed`] paths.
    #[cfg(test)]
    pub(super) fn stopped() -> Self {
        let (jobs, _) = mpsc::channel::<Job>();
        Db::Thread(jobs)
    }
}

/// Runs `work` on a database in memory, once no other job is running on it. A job that panicked
/// poisoned the mutex but left the connection usable (its transaction rolled back when dropped),
/// so the next job goes on, as the next job on a database thread would.
fn run_inline<T>(
    conn: &Mutex<Connection>,
    work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
    work(&mut conn)
}

/// The thread body. `recv` fails once every sender is dropped, which is the shutdown signal;
/// dropping the connection then closes the database cleanly.
fn serve(mut conn: Connection, inbox: Receiver<Job>) {
    while let Ok(job) = inbox.recv() {
        job(&mut conn);
    }
}
