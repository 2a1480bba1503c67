//! SQLite persistence: users, revoked session tokens, thread metadata, checkpoints, runs and the
//! run-event journal.
//!
//! One dedicated thread owns the `rusqlite::Connection`; async callers send it closures over a
//! channel and await the answer, so blocking SQLite calls never stall the async workers and writes
//! are serialised. Every [`Store`] is opened on its own folder, so
//! gateways with different homes never share a database, and a folder's owner lock
//! (`owner_lock`) keeps a second gateway off a database that one has open.
//!
//! Layout: `worker` runs the statements (on the database thread of a file, on the caller's
//! thread for a database in memory), `schema` holds the pragmas and numbered
//! migrations, `sql` the shared query helpers, and one module per table holds its SQL.
//!
//! Each message is stored once per thread (`checkpoint_messages`); a checkpoint names its list by
//! ids (`message_refs`: a full list, or a delta over its parent's until the deltas outgrow the
//! last full list, so a step writes what it changed), its `writes` by ids (`write_refs`), and a
//! journal row of a message by id (`run_events.message_ref`). A fresh database is initialised
//! (incremental vacuum, WAL) without syncs, as it holds nothing yet; every commit after is
//! `synchronous=NORMAL` in WAL (or never synced with `database.synchronous = "off"`, which only
//! the harness's hermetic configuration sets, for a database thrown away with its gateway). The
//! database folder is created `0700` and the file `0600`; incremental vacuum returns a deleted
//! thread's pages, in chunks, each followed by a `wal_checkpoint(TRUNCATE)`, so the WAL does not
//! grow by what a delete frees; `reserve.rs` keeps 4 MiB of disk (allocated, not written) that a
//! delete gives up on a full disk. `owner_lock.rs`: the open store holds an exclusive lock on the
//! folder, so a second gateway on the same database refuses to start (its crash recovery would
//! finish the first one's live runs).

mod checkpoints;
mod events;
mod owner_lock;
mod private_files;
mod reserve;
mod runs;
mod schema;
mod sessions;
mod sql;
mod threads;
mod users;
mod worker;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;
use serde_json::{Value, json};

use owner_lock::OwnerLock;
use reserve::Reserve;
use sql::write_transaction;
use worker::Db;

use crate::config::{DatabaseBackend, DatabaseConfig, Synchronous};
use crate::run_status::{MultitaskStrategy, RunStatus};

/// The database file inside the folder given to [`Store::open`].
const DATABASE_FILE: &str = "deerflow.db";

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused the operation.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A unique constraint was violated (e.g. an e-mail already registered).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The folder or file could not be prepared.
    #[error("database folder {path}: {source}")]
    Io {
        /// The folder.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A JSON column did not hold JSON.
    #[error("corrupt JSON in column {column}: {source}")]
    Json {
        /// Table and column.
        column: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A row refers to data that is not there (a damaged database).
    #[error("corrupt database: {0}")]
    Corrupt(String),
    /// The database thread is gone (the store was closed).
    #[error("the database thread has stopped")]
    Closed,
    /// Another gateway (in this process or another) has the database open.
    #[error(
        "database folder {dir} is in use by another gateway (it holds {lock} there); give each \
         gateway its own home or `database.sqlite_dir`"
    )]
    InUse {
        /// The database folder.
        dir: std::path::PathBuf,
        /// The lock file's name in it.
        lock: std::path::PathBuf,
    },
}

/// A registered user.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRecord {
    /// UUID string, or `default` for the synthetic user.
    pub id: String,
    /// Unique, stored lower-cased.
    pub email: String,
    /// The argon2 PHC string.
    pub password_hash: String,
    /// `user` or `admin`.
    pub system_role: String,
    /// Bumped to invalidate issued tokens.
    pub token_version: i64,
    /// Whether the user must finish setup.
    pub needs_setup: bool,
    /// OAuth provider name, if any.
    pub oauth_provider: Option<String>,
    /// ISO timestamp.
    pub created_at: String,
}

/// What a session token stands for, looked up on every authenticated request.
#[derive(Debug, Clone, PartialEq)]
pub enum Session {
    /// The token's user.
    Active(UserRecord),
    /// The token was revoked by logout.
    Revoked,
    /// The token's user does not exist (any more).
    UnknownUser,
}

/// Thread metadata (one row per thread).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRecord {
    /// The thread id.
    pub thread_id: String,
    /// The owning user's id.
    pub owner_id: String,
    /// The assistant the thread was created for (`lead_agent` by default).
    pub assistant_id: Option<String>,
    /// `idle`, `running`, or a run's terminal status.
    pub status: String,
    /// Client metadata (a JSON object).
    pub metadata: Value,
    /// The title copied from state when a run completes.
    pub display_name: Option<String>,
    /// ISO timestamp.
    pub created_at: String,
    /// ISO timestamp.
    pub updated_at: String,
}

/// The state of a thread after one step.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRecord {
    /// The thread.
    pub thread_id: String,
    /// Unique id (UUID string).
    pub checkpoint_id: String,
    /// The previous checkpoint of the thread, if any.
    pub parent_checkpoint_id: Option<String>,
    /// The step number (`-1` for the empty checkpoint written at thread creation).
    pub step: i64,
    /// The serialised state values (a JSON object).
    pub values: Value,
    /// Checkpoint metadata (a JSON object).
    pub metadata: Value,
    /// ISO timestamp.
    pub created_at: String,
}

/// The messages one step changed: what a checkpoint stored from its parent's needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageChanges {
    /// How many messages the state holds after the step.
    pub len: usize,
    /// Each message the step added or replaced: its position and its dump.
    pub changed: Vec<(usize, Value)>,
    /// The messages of the checkpoint's `metadata.writes` (the step's node wrote them), in
    /// order: each one's position in the list and whether the write shows it without the id the
    /// state gave it. The store then keeps the writes as references to the stored messages
    /// rather than a second copy; empty keeps `metadata` as it is.
    pub writes: Vec<(usize, bool)>,
}

/// One run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The run id.
    pub run_id: String,
    /// The thread.
    pub thread_id: String,
    /// Who started it.
    pub owner_id: String,
    /// `lead_agent` or a custom agent name.
    pub assistant_id: String,
    /// Where the run is in its life.
    pub status: RunStatus,
    /// Client metadata (a JSON object).
    pub metadata: Value,
    /// `{"input", "config"}` as the run was requested (secrets redacted).
    pub kwargs: Value,
    /// What the run did to the run that was active on its thread.
    pub multitask_strategy: MultitaskStrategy,
    /// The error text when `status` is `error`.
    pub error: Option<String>,
    /// Why the run stopped (`recursion_limit`, `cancelled`, …), if notable.
    pub stop_reason: Option<String>,
    /// Token and call counters: `total_input_tokens`, `total_output_tokens`, `total_tokens`,
    /// `llm_call_count`, `lead_agent_tokens`, `subagent_tokens`, `middleware_tokens`,
    /// `message_count` (a JSON object of integers).
    pub counters: Value,
    /// ISO timestamp; compared as a string when listing.
    pub created_at: String,
    /// ISO timestamp.
    pub updated_at: String,
}

impl RunRecord {
    /// A finished run written directly rather than by a run (the test-only seed route, tests):
    /// `success`, `lead_agent`, no metadata, kwargs or counters, updated when it was created.
    pub fn seeded(run_id: &str, thread_id: &str, owner_id: &str, created_at: &str) -> RunRecord {
        RunRecord {
            run_id: run_id.into(),
            thread_id: thread_id.into(),
            owner_id: owner_id.into(),
            assistant_id: "lead_agent".into(),
            status: RunStatus::Success,
            metadata: json!({}),
            kwargs: json!({}),
            multitask_strategy: MultitaskStrategy::Reject,
            error: None,
            stop_reason: None,
            counters: json!({}),
            created_at: created_at.into(),
            updated_at: created_at.into(),
        }
    }
}

/// Which runs [`Store::finish_orphaned_runs`] finishes, and how.
#[derive(Debug, Clone, Copy)]
pub struct Orphaned<'a> {
    /// Only runs created at or before this ISO timestamp (compared as strings).
    pub before: &'a str,
    /// The run's `error` text.
    pub error: &'a str,
    /// The run's `stop_reason`.
    pub stop_reason: &'a str,
    /// The ISO timestamp for `updated_at`.
    pub now: &'a str,
}

/// A journal row to append; `seq` is assigned by the store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The run.
    pub run_id: String,
    /// `run.start`, `llm.human.input`, `llm.ai.response`, `llm.tool.result`, `run.end`, …
    pub event_type: String,
    /// `trace`, `message`, `outputs`, `error`, `middleware`.
    pub category: String,
    /// A JSON value (a message dump for message rows), or `null`.
    pub content: Value,
    /// For a message row whose dump shows no id (a tool result, journaled before the state's
    /// reducer names it): the id the thread's state holds it under. The store keeps one copy of
    /// a message; this lets the journal row name the state's copy and still read as journaled.
    pub message_id: Option<String>,
    /// A JSON object.
    pub metadata: Value,
    /// ISO timestamp.
    pub created_at: String,
}

/// A stored journal row.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The thread.
    pub thread_id: String,
    /// Monotonic per thread, starting at 1.
    pub seq: i64,
    /// The row as appended.
    pub event: NewEvent,
}

/// Which journal rows to read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventQuery {
    /// Only this run (all runs of the thread when `None`).
    pub run_id: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only these event types (any when empty).
    pub event_types: Vec<String>,
    /// Only rows with `seq < before_seq`.
    pub before_seq: Option<i64>,
    /// Only rows with `seq > after_seq`.
    pub after_seq: Option<i64>,
    /// At most this many rows. With `after_seq` the first rows are kept; otherwise the last.
    /// Rows are always returned in ascending `seq`. `0` means no limit.
    pub limit: usize,
}

/// A cheap, cloneable handle to the database thread. The handles together hold the database
/// folder's owner lock, so no second gateway opens the same database while one is open (a
/// database in memory is one gateway's alone and has no folder).
#[derive(Debug, Clone)]
pub struct Store {
    db: Db,
    _owner: Option<Arc<OwnerLock>>,
    /// Space given up when the disk is full (`reserve.rs`).
    reserve: Arc<Reserve>,
}

impl StoreError {
    /// Whether SQLite refused the write because the disk (or the database) is full.
    pub fn is_disk_full(&self) -> bool {
        reserve::is_disk_full(self)
    }
}

impl Store {
    /// Opens (creating) `<dir>/deerflow.db`, sets WAL, `busy_timeout=5000`, `foreign_keys=ON`,
    /// and runs the numbered migrations in a transaction, bumping `PRAGMA user_version`.
    ///
    /// A missing `dir` is created `0700` and a missing database file `0600` (before the umask);
    /// SQLite gives its WAL and shared-memory files the database file's mode. A folder another
    /// open store holds is [`StoreError::InUse`].
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(dir, &DatabaseConfig::default())
    }

    /// The store `database.backend` names: [`Store::open_in_memory`] for `memory`; for `sqlite`,
    /// [`Store::open`] syncing as `database.synchronous` says, with the disk-space reserve when
    /// `database.space_reserve` asks for one. `dir` is the `sqlite` database's folder.
    /// (`postgres` never gets here: the configuration's validation refuses it.)
    pub fn open_with(dir: &Path, settings: &DatabaseConfig) -> Result<Store, StoreError> {
        match settings.backend {
            DatabaseBackend::Memory => Store::open_in_memory(),
            DatabaseBackend::Sqlite | DatabaseBackend::Postgres => Store::open_file(dir, settings),
        }
    }

    /// A database in memory (`database.backend = "memory"`): the same settings and migrations
    /// as a file's, gone when the last handle is dropped. No folder, lock, reserve, file or
    /// database thread (its statements wait on no disk, so they run on the caller's thread, see
    /// `worker.rs`), so a test's gateway spends nothing on the file system or on thread hops
    /// (issue 46).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        schema::configure(&conn, true, Synchronous::Off)?;
        schema::enable_incremental_vacuum(&conn)?;
        schema::migrate(&mut conn)?;
        Ok(Store {
            db: Db::inline(conn),
            _owner: None,
            reserve: Arc::new(Reserve::none()),
        })
    }

    /// `<dir>/deerflow.db`, see [`Store::open_with`].
    fn open_file(dir: &Path, settings: &DatabaseConfig) -> Result<Store, StoreError> {
        let io_error = |source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        };
        private_files::create_dir(dir).map_err(io_error)?;
        // Before the database is touched: a second gateway must not even migrate it.
        let owner = OwnerLock::take(dir)?;
        let file = dir.join(DATABASE_FILE);
        private_files::create_file(&file).map_err(io_error)?;
        let fresh = std::fs::metadata(&file).map_err(io_error)?.len() == 0;
        // Migrating before the thread starts means no query can ever see an old schema.
        let mut conn = Connection::open(&file)?;
        schema::configure(&conn, fresh, settings.synchronous)?;
        schema::enable_incremental_vacuum(&conn)?;
        schema::migrate(&mut conn)?;
        Ok(Store {
            db: Db::spawn(conn, dir)?,
            _owner: Some(Arc::new(owner)),
            reserve: Arc::new(if settings.space_reserve {
                Reserve::new(dir)
            } else {
                Reserve::none()
            }),
        })
    }

    /// Runs `write`, and once more after giving up the disk-space reserve when it failed because
    /// the disk is full: for the writes that free space or must not be lost.
    async fn with_reserve<T, F, Fut>(&self, write: F) -> Result<T, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>>,
    {
        match write().await {
            Err(err) if reserve::is_disk_full(&err) && self.reserve.release() => write().await,
            done => done,
        }
    }

    /// The schema version after migrations.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        self.db.call(|conn| schema::version(conn)).await
    }

    /// Inserts a user; a duplicate e-mail (case-insensitive) is [`StoreError::Conflict`].
    pub async fn create_user(&self, user: UserRecord) -> Result<UserRecord, StoreError> {
        self.db.call(move |conn| users::insert(conn, user)).await
    }

    /// The user with this e-mail (case-insensitive).
    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
        let email = email.to_owned();
        self.db
            .call(move |conn| users::by_email(conn, &email))
            .await
    }

    /// The user with this id.
    pub async fn user_by_id(&self, id: &str) -> Result<Option<UserRecord>, StoreError> {
        let id = id.to_owned();
        self.db.call(move |conn| users::by_id(conn, &id)).await
    }

    /// The user of the session token `token_id` (see [`crate::auth::token_id`]) issued to
    /// `user_id`, unless the token was revoked. One query for both, on every request.
    pub async fn session(&self, user_id: &str, token_id: &str) -> Result<Session, StoreError> {
        let (user_id, token_id) = (user_id.to_owned(), token_id.to_owned());
        self.db
            .call(move |conn| sessions::session(conn, &user_id, &token_id))
            .await
    }

    /// Revokes the session token `token_id` of `user_id` until `expires_at` (epoch seconds, the
    /// token's `exp`), and forgets revocations of tokens expired before `now` (epoch seconds).
    pub async fn revoke_token(
        &self,
        token_id: &str,
        user_id: &str,
        expires_at: i64,
        now: i64,
    ) -> Result<(), StoreError> {
        let (token_id, user_id) = (token_id.to_owned(), user_id.to_owned());
        self.db
            .call(move |conn| sessions::revoke(conn, &token_id, &user_id, expires_at, now))
            .await
    }

    /// How many users exist.
    pub async fn count_users(&self) -> Result<i64, StoreError> {
        self.db.call(|conn| users::count(conn)).await
    }

    /// Inserts the thread and its initial checkpoint in one transaction, unless a thread with
    /// that id exists: then nothing is written and the existing record is returned. The bool is
    /// true when the thread was created.
    pub async fn create_thread(
        &self,
        thread: ThreadRecord,
        initial: CheckpointRecord,
    ) -> Result<(ThreadRecord, bool), StoreError> {
        self.db
            .call(move |conn| threads::create(conn, thread, &initial))
            .await
    }

    /// The thread's metadata row.
    pub async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| threads::get(conn, &thread_id))
            .await
    }

    /// Sets status (and display name when given) and bumps `updated_at`.
    pub async fn set_thread_status(
        &self,
        thread_id: &str,
        status: &str,
        display_name: Option<String>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        let (thread_id, status, updated_at) = (
            thread_id.to_owned(),
            status.to_owned(),
            updated_at.to_owned(),
        );
        self.db
            .call(move |conn| {
                threads::set_status(
                    conn,
                    &thread_id,
                    &status,
                    display_name.as_deref(),
                    &updated_at,
                )
            })
            .await
    }

    /// Replaces the metadata object and bumps `updated_at`.
    pub async fn set_thread_metadata(
        &self,
        thread_id: &str,
        metadata: Value,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        let (thread_id, updated_at) = (thread_id.to_owned(), updated_at.to_owned());
        self.db
            .call(move |conn| threads::set_metadata(conn, &thread_id, &metadata, &updated_at))
            .await
    }

    /// The owner's threads whose metadata contains every key/value of `metadata_filter` (a JSON
    /// object; top-level equality) and whose status equals `status` when given; newest
    /// `updated_at` first.
    pub async fn search_threads(
        &self,
        owner_id: &str,
        metadata_filter: Value,
        status: Option<String>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ThreadRecord>, StoreError> {
        let owner_id = owner_id.to_owned();
        self.db
            .call(move |conn| {
                let search = threads::Search {
                    owner_id: &owner_id,
                    metadata: &metadata_filter,
                    status: status.as_deref(),
                    limit,
                    offset,
                };
                threads::search(conn, &search)
            })
            .await
    }

    /// Deletes the thread row, its checkpoints, runs and journal rows. True when a row existed.
    /// It works on a full disk too, through the disk-space reserve (only deletes use it, so
    /// that ordinary writes cannot spend it), which it puts back once the delete has freed
    /// space.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        let deleted = self
            .with_reserve(|| {
                let thread_id = thread_id.to_owned();
                self.db.call(move |conn| threads::delete(conn, &thread_id))
            })
            .await?;
        let reserve = self.reserve.clone();
        // On the database thread: writing the reserve is blocking file I/O.
        let _ = self
            .db
            .call(move |_| {
                reserve.restore();
                Ok(())
            })
            .await;
        Ok(deleted)
    }

    /// Stores a checkpoint.
    pub async fn put_checkpoint(&self, checkpoint: CheckpointRecord) -> Result<(), StoreError> {
        self.db
            .call(move |conn| {
                let tx = write_transaction(conn)?;
                checkpoints::insert(&tx, &checkpoint)?;
                Ok(tx.commit()?)
            })
            .await
    }

    /// Stores a checkpoint whose messages are its parent's with `changes` applied: the cost of a
    /// step is what it changed, not the conversation. `checkpoint.values` holds every other
    /// channel; its parent must be stored (its id is `parent_checkpoint_id`, none for the first).
    pub async fn put_checkpoint_changes(
        &self,
        checkpoint: CheckpointRecord,
        changes: MessageChanges,
    ) -> Result<(), StoreError> {
        self.db
            .call(move |conn| {
                let tx = write_transaction(conn)?;
                checkpoints::insert_changes(&tx, &checkpoint, &changes)?;
                Ok(tx.commit()?)
            })
            .await
    }

    /// The newest checkpoint of the thread (by insertion order).
    pub async fn latest_checkpoint(
        &self,
        thread_id: &str,
    ) -> Result<Option<CheckpointRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| checkpoints::latest(conn, &thread_id))
            .await
    }

    /// The `title` channel of the thread's latest checkpoint, read without its messages.
    pub async fn latest_title(&self, thread_id: &str) -> Result<Option<Value>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| checkpoints::latest_title(conn, &thread_id))
            .await
    }

    /// Checkpoints newest first, at most `limit`, only those older than `before` (a checkpoint
    /// id) when given.
    pub async fn list_checkpoints(
        &self,
        thread_id: &str,
        limit: usize,
        before: Option<String>,
    ) -> Result<Vec<CheckpointRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| checkpoints::list(conn, &thread_id, limit, before.as_deref()))
            .await
    }

    /// Inserts or replaces the run (keyed by `run_id`).
    pub async fn put_run(&self, run: RunRecord) -> Result<(), StoreError> {
        self.db.call(move |conn| runs::upsert(conn, &run)).await
    }

    /// The run with this id.
    pub async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let run_id = run_id.to_owned();
        self.db.call(move |conn| runs::get(conn, &run_id)).await
    }

    /// Marks the runs no worker can own any more (`pending` or `running`, created at or before
    /// `orphan.before`) as `error`, and their threads that are still `running` as `error`, in one
    /// transaction. Returns the runs changed as `(run_id, thread_id)`.
    ///
    /// **Blocking**: it waits for the database thread. Meant for start-up (a synchronous
    /// builder), before any run exists; never call it from request handling.
    pub fn finish_orphaned_runs(
        &self,
        orphan: Orphaned<'_>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let (before, error, stop_reason, now) = (
            orphan.before.to_owned(),
            orphan.error.to_owned(),
            orphan.stop_reason.to_owned(),
            orphan.now.to_owned(),
        );
        self.db.call_blocking(move |conn| {
            let orphan = Orphaned {
                before: &before,
                error: &error,
                stop_reason: &stop_reason,
                now: &now,
            };
            runs::finish_orphans(conn, &orphan)
        })
    }

    /// The thread's runs owned by `owner_id`, sorted by `created_at` descending **as strings**,
    /// at most `limit`.
    pub async fn list_runs(
        &self,
        thread_id: &str,
        owner_id: &str,
        limit: usize,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let (thread_id, owner_id) = (thread_id.to_owned(), owner_id.to_owned());
        self.db
            .call(move |conn| runs::list(conn, &thread_id, &owner_id, limit))
            .await
    }

    /// Appends rows for one thread in one transaction, assigning consecutive `seq` values after
    /// the thread's current maximum. Returns the stored rows.
    pub async fn append_events(
        &self,
        thread_id: &str,
        events: Vec<NewEvent>,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| events::append(conn, &thread_id, events))
            .await
    }

    /// Journal rows of a thread matching `query`, ascending `seq`. A `limit` of 0 means no
    /// limit.
    pub async fn query_events(
        &self,
        thread_id: &str,
        query: EventQuery,
    ) -> Result<Vec<EventRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.db
            .call(move |conn| events::query(conn, &thread_id, &query))
            .await
    }
}
