//! Connection settings and the numbered schema migrations.
//!
//! `PRAGMA user_version` records how many entries of [`MIGRATIONS`] have been applied, so a
//! database written by an older gateway is brought up to date by running only the missing ones.
//! A fresh database takes [`FRESH_SCHEMA`] instead, what every step together leaves, in one go.

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;
use crate::config::Synchronous;

/// Schema changes, in order; entry `i` takes the database from version `i` to `i + 1`.
/// Append new entries; never edit one that has shipped; and bring [`FRESH_SCHEMA`] to the same
/// end (a test compares the two).
///
/// There are deliberately no foreign keys from checkpoints, runs or journal rows to `threads`:
/// runs and journal rows may exist for a thread that has no metadata row (the test-only seeding
/// route creates exactly that).
pub(super) const MIGRATIONS: &[&str] = &[
    V1_INITIAL,
    V2_CHECKPOINT_MESSAGES,
    V3_REVOKED_TOKENS,
    V4_MESSAGES_STORED_ONCE,
];

const V1_INITIAL: &str = "
CREATE TABLE users (
    id             TEXT PRIMARY KEY NOT NULL,
    email          TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash  TEXT NOT NULL,
    system_role    TEXT NOT NULL,
    token_version  INTEGER NOT NULL DEFAULT 0,
    needs_setup    INTEGER NOT NULL DEFAULT 0,
    oauth_provider TEXT,
    created_at     TEXT NOT NULL
);

CREATE TABLE threads (
    thread_id    TEXT PRIMARY KEY NOT NULL,
    owner_id     TEXT NOT NULL,
    assistant_id TEXT,
    status       TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    display_name TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX threads_by_owner ON threads (owner_id, updated_at);

-- `ordinal` aliases the rowid, so insertion order is explicit and survives VACUUM.
CREATE TABLE checkpoints (
    ordinal              INTEGER PRIMARY KEY,
    thread_id            TEXT NOT NULL,
    checkpoint_id        TEXT NOT NULL UNIQUE,
    parent_checkpoint_id TEXT,
    step                 INTEGER NOT NULL,
    values_json          TEXT NOT NULL,
    metadata_json        TEXT NOT NULL,
    created_at           TEXT NOT NULL
);
CREATE INDEX checkpoints_by_thread ON checkpoints (thread_id);

CREATE TABLE runs (
    run_id             TEXT PRIMARY KEY NOT NULL,
    thread_id          TEXT NOT NULL,
    owner_id           TEXT NOT NULL,
    assistant_id       TEXT NOT NULL,
    status             TEXT NOT NULL,
    metadata           TEXT NOT NULL,
    kwargs             TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    error              TEXT,
    stop_reason        TEXT,
    counters           TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE INDEX runs_by_thread ON runs (thread_id);

CREATE TABLE run_events (
    thread_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT NOT NULL,
    event_type TEXT NOT NULL,
    category   TEXT NOT NULL,
    content    TEXT NOT NULL,
    metadata   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE INDEX run_events_by_run ON run_events (thread_id, run_id, seq);
";

/// Messages stored once per thread and referenced from checkpoints (see `checkpoints.rs`):
/// without it every step stored the whole conversation again.
const V2_CHECKPOINT_MESSAGES: &str = "
ALTER TABLE checkpoints ADD COLUMN message_refs TEXT;

CREATE TABLE checkpoint_messages (
    id        INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    hash      TEXT NOT NULL,
    body      TEXT NOT NULL,
    UNIQUE (thread_id, hash)
);
";

/// Session tokens revoked by logout, until they would have expired anyway. `token_id` is the
/// SHA-256 of the token (the token itself never reaches the database); `expires_at` is its `exp`
/// in epoch seconds.
const V3_REVOKED_TOKENS: &str = "
CREATE TABLE revoked_tokens (
    token_id   TEXT PRIMARY KEY NOT NULL,
    user_id    TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
";

/// Every message stored once (issue 21, finding 11): a journal row of a message
/// (`message_ref`) and a checkpoint's writes (`write_refs`) name its `checkpoint_messages` row
/// instead of holding a third and second copy of it. Rows written before keep their content
/// inline (`NULL` here) and read as before.
const V4_MESSAGES_STORED_ONCE: &str = "
ALTER TABLE run_events ADD COLUMN message_ref INTEGER;
ALTER TABLE checkpoints ADD COLUMN write_refs TEXT;
";

/// The schema [`MIGRATIONS`] leave, written as one script without their `ALTER TABLE` steps:
/// what a fresh database (every Layer 1 gateway's) is given. Each `ALTER TABLE` makes SQLite
/// parse the whole schema again, so the steps one by one took twice as long (0.7 ms of a 12 ms
/// Layer 1 test process, issue 46). The columns the steps added come last, in the order they
/// were added, as `ALTER TABLE` put them.
/// Test: `store::tests::a_fresh_schema_is_the_migrated_schema`.
pub(super) const FRESH_SCHEMA: &str = "
CREATE TABLE users (
    id             TEXT PRIMARY KEY NOT NULL,
    email          TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash  TEXT NOT NULL,
    system_role    TEXT NOT NULL,
    token_version  INTEGER NOT NULL DEFAULT 0,
    needs_setup    INTEGER NOT NULL DEFAULT 0,
    oauth_provider TEXT,
    created_at     TEXT NOT NULL
);

CREATE TABLE threads (
    thread_id    TEXT PRIMARY KEY NOT NULL,
    owner_id     TEXT NOT NULL,
    assistant_id TEXT,
    status       TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    display_name TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX threads_by_owner ON threads (owner_id, updated_at);

CREATE TABLE checkpoints (
    ordinal              INTEGER PRIMARY KEY,
    thread_id            TEXT NOT NULL,
    checkpoint_id        TEXT NOT NULL UNIQUE,
    parent_checkpoint_id TEXT,
    step                 INTEGER NOT NULL,
    values_json          TEXT NOT NULL,
    metadata_json        TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    message_refs         TEXT,
    write_refs           TEXT
);
CREATE INDEX checkpoints_by_thread ON checkpoints (thread_id);

CREATE TABLE runs (
    run_id             TEXT PRIMARY KEY NOT NULL,
    thread_id          TEXT NOT NULL,
    owner_id           TEXT NOT NULL,
    assistant_id       TEXT NOT NULL,
    status             TEXT NOT NULL,
    metadata           TEXT NOT NULL,
    kwargs             TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    error              TEXT,
    stop_reason        TEXT,
    counters           TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE INDEX runs_by_thread ON runs (thread_id);

CREATE TABLE run_events (
    thread_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    run_id      TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    category    TEXT NOT NULL,
    content     TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    message_ref INTEGER,
    PRIMARY KEY (thread_id, seq)
);
CREATE INDEX run_events_by_run ON run_events (thread_id, run_id, seq);

CREATE TABLE checkpoint_messages (
    id        INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    hash      TEXT NOT NULL,
    body      TEXT NOT NULL,
    UNIQUE (thread_id, hash)
);

CREATE TABLE revoked_tokens (
    token_id   TEXT PRIMARY KEY NOT NULL,
    user_id    TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
";

/// `PRAGMA auto_vacuum = INCREMENTAL`.
const INCREMENTAL_VACUUM: i64 = 2;

/// Applies the per-connection settings the store relies on.
/// `fresh` says the database file was empty when it was opened (made just now); `synchronous`
/// is `database.synchronous`.
pub(super) fn configure(
    conn: &Connection,
    fresh: bool,
    synchronous: Synchronous,
) -> Result<(), StoreError> {
    // A fresh database is initialised (its header written for incremental vacuum, then for WAL)
    // in two rollback-journal transactions, each syncing the journal, the folder and the file:
    // six syncs of every start of a Layer 1 test, for a database that holds nothing yet, so a
    // power loss there loses nothing. They are not synced; everything after is.
    //
    // In WAL mode NORMAL still never corrupts the database; it only lets the last commits before
    // a power loss roll back, and it spares an fsync per commit (a run commits once per step).
    // Set first, so that switching an older database to WAL does not fsync either.
    //
    // `database.synchronous = "off"` never syncs: a database thrown away with its gateway (the
    // replay harness's) otherwise waits on the disk at every checkpoint and when it closes.
    let running = match synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Off => "OFF",
    };
    let setup = if fresh { "OFF" } else { running };
    conn.pragma_update(None, "synchronous", setup)?;
    // Before WAL is switched on: a fresh database takes incremental vacuum only while its file
    // is still empty; later it needs a VACUUM (see `enable_incremental_vacuum`). On an older
    // database this does nothing.
    conn.pragma_update(None, "auto_vacuum", INCREMENTAL_VACUUM)?;
    // WAL lets readers (e.g. a debugging sqlite3 shell) work while the gateway writes.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    if fresh {
        conn.pragma_update(None, "synchronous", running)?;
    }
    conn.busy_timeout(Duration::from_millis(5000))?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // Room for every statement a run repeats (rusqlite keeps 16 by default, fewer than the
    // store's cached statements), so none is parsed again at each step.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Makes freed pages go back to the file system: deleting a thread frees its pages, and
/// [`release_free_pages`] returns them. A fresh database takes the setting directly; an older
/// one written without it is rebuilt once by `VACUUM`, which is the only way SQLite can switch.
pub(super) fn enable_incremental_vacuum(conn: &Connection) -> Result<(), StoreError> {
    const INCREMENTAL: i64 = INCREMENTAL_VACUUM;
    let mode = || -> Result<i64, StoreError> {
        Ok(conn.pragma_query_value(None, "auto_vacuum", |row| row.get(0))?)
    };
    if mode()? != INCREMENTAL {
        conn.pragma_update(None, "auto_vacuum", INCREMENTAL)?;
        // A fresh database took the setting in `configure`; only an older one needs the
        // rebuild, which every fresh database (every Layer 1 boot) was paying for, syncs
        // included.
        if mode()? != INCREMENTAL {
            conn.execute_batch("VACUUM")?;
        }
    }
    Ok(())
}

/// Returns the database's free pages to the file system (after a delete).
pub(super) fn release_free_pages(conn: &Connection) -> Result<(), StoreError> {
    // In chunks, each checkpointed and the WAL truncated after it: vacuuming every free page at
    // once logs them all, so the WAL grew as large as what was freed (821 MB for 315 MB of
    // threads) and needed that much free disk.
    let mut free = free_pages(conn)?;
    while free > 0 {
        // `incremental_vacuum` returns a row per freed page; they must be stepped through.
        let mut statement =
            conn.prepare(&format!("PRAGMA incremental_vacuum({VACUUM_CHUNK_PAGES})"))?;
        let mut rows = statement.query([])?;
        while rows.next()?.is_some() {}
        drop(rows);
        truncate_wal(conn)?;
        let left = free_pages(conn)?;
        if left >= free {
            break;
        }
        free = left;
    }
    truncate_wal(conn)
}

/// Pages vacuumed between two WAL checkpoints (4 MiB at SQLite's default page size).
const VACUUM_CHUNK_PAGES: i64 = 1024;

fn free_pages(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.pragma_query_value(None, "freelist_count", |row| row.get(0))?)
}

/// Copies the WAL into the database and truncates it to nothing. SQLite's automatic checkpoint
/// reuses the WAL but never shrinks it, so a large delete (every freed page is logged) left a
/// WAL as large as what it freed (issue 21, finding 11). Readers still inside the log make the
/// checkpoint stop short (its `busy` answer); that is not an error, the next delete does it.
pub(super) fn truncate_wal(conn: &Connection) -> Result<(), StoreError> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
    if busy != 0 {
        tracing::debug!("the WAL checkpoint after a delete stopped short: readers are active");
    }
    Ok(())
}

/// The number of migrations applied to this database.
pub(super) fn version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Runs the migrations this database has not seen yet, each in its own transaction together
/// with the `user_version` bump, so a crash never leaves a half-applied step behind. A fresh
/// database (version 0, no table) takes [`FRESH_SCHEMA`] and the last version in one
/// transaction instead.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    loop {
        // IMMEDIATE takes the write lock before reading the version, so two processes opening
        // the same folder cannot both apply the same step.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied = version(&tx)?;
        if applied == 0 && is_empty(&tx)? {
            tx.execute_batch(FRESH_SCHEMA)?;
            tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
            tx.commit()?;
            return Ok(());
        }
        let Some(step) = usize::try_from(applied)
            .ok()
            .and_then(|index| MIGRATIONS.get(index))
        else {
            // Up to date (or written by a newer gateway, whose extra steps we leave alone).
            return Ok(());
        };
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", applied + 1)?;
        tx.commit()?;
    }
}

/// Whether the database holds no table, index or other schema object.
fn is_empty(conn: &Connection) -> Result<bool, StoreError> {
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
    Ok(objects == 0)
}

/// Runs every step of [`MIGRATIONS`] one by one from version 0, as a database first written
/// by the first gateway has seen them: what [`FRESH_SCHEMA`] must equal.
#[cfg(test)]
pub(super) fn migrate_step_by_step(conn: &mut Connection) -> Result<(), StoreError> {
    for (index, step) in MIGRATIONS.iter().enumerate() {
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}
