//! The `threads` table (one metadata row per thread), and deleting a thread with everything
//! stored for it.

use rusqlite::{Connection, Row, params};
use serde_json::Value;

use super::sql::{json_column, json_text, query_all, query_first, write_transaction};
use super::{CheckpointRecord, StoreError, ThreadRecord, checkpoints, events, runs, schema};

const TABLE: &str = "threads";
const COLUMNS: &str =
    "thread_id, owner_id, assistant_id, status, metadata, display_name, created_at, updated_at";

/// Inserts the thread and its first checkpoint together, unless the thread exists: then
/// nothing is written and the stored record comes back with `false`.
pub(super) fn create(
    conn: &mut Connection,
    thread: ThreadRecord,
    initial: &CheckpointRecord,
) -> Result<(ThreadRecord, bool), StoreError> {
    let tx = write_transaction(conn)?;
    if let Some(existing) = get(&tx, &thread.thread_id)? {
        return Ok((existing, false));
    }
    insert(&tx, &thread)?;
    checkpoints::insert(&tx, initial)?;
    tx.commit()?;
    Ok((thread, true))
}

fn insert(conn: &Connection, thread: &ThreadRecord) -> Result<(), StoreError> {
    conn.execute(
        &format!("INSERT INTO threads ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            thread.thread_id,
            thread.owner_id,
            thread.assistant_id,
            thread.status,
            json_text(&thread.metadata, TABLE, "metadata")?,
            thread.display_name,
            thread.created_at,
            thread.updated_at,
        ],
    )?;
    Ok(())
}

/// The thread's metadata row.
pub(super) fn get(conn: &Connection, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
    query_first(
        conn,
        &format!("SELECT {COLUMNS} FROM threads WHERE thread_id = ?1"),
        [thread_id],
        decode,
    )
}

/// Sets the status, the display name when one is given, and `updated_at`.
pub(super) fn set_status(
    conn: &Connection,
    thread_id: &str,
    status: &str,
    display_name: Option<&str>,
    updated_at: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE threads
         SET status = ?2, display_name = COALESCE(?3, display_name), updated_at = ?4
         WHERE thread_id = ?1",
        params![thread_id, status, display_name, updated_at],
    )?;
    Ok(())
}

/// Replaces the metadata object and sets `updated_at`.
pub(super) fn set_metadata(
    conn: &Connection,
    thread_id: &str,
    metadata: &Value,
    updated_at: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
        params![
            thread_id,
            json_text(metadata, TABLE, "metadata")?,
            updated_at
        ],
    )?;
    Ok(())
}

/// What [`search`] looks for.
pub(super) struct Search<'a> {
    pub(super) owner_id: &'a str,
    pub(super) metadata: &'a Value,
    pub(super) status: Option<&'a str>,
    pub(super) limit: usize,
    pub(super) offset: usize,
}

/// The owner's matching threads, most recently updated first, paged by `offset` and `limit`.
pub(super) fn search(
    conn: &Connection,
    search: &Search<'_>,
) -> Result<Vec<ThreadRecord>, StoreError> {
    // The rowid only breaks ties between equal timestamps, so that paging is stable.
    let sql = format!(
        "SELECT {COLUMNS} FROM threads
         WHERE owner_id = ?1 AND (?2 IS NULL OR status = ?2)
         ORDER BY updated_at DESC, rowid DESC"
    );
    // Metadata is filtered here rather than in SQL: equality on arbitrary JSON values is
    // simpler and exact in serde_json, and one owner's threads are few.
    let owned = query_all(conn, &sql, params![search.owner_id, search.status], decode)?;
    Ok(owned
        .into_iter()
        .filter(|thread| metadata_matches(&thread.metadata, search.metadata))
        .skip(search.offset)
        .take(search.limit)
        .collect())
}

/// Whether `metadata` holds every top-level key of `filter` with an equal value. A filter that
/// is not an object (e.g. `null`) filters nothing.
fn metadata_matches(metadata: &Value, filter: &Value) -> bool {
    let Some(wanted) = filter.as_object() else {
        return true;
    };
    wanted
        .iter()
        .all(|(key, value)| metadata.get(key) == Some(value))
}

/// Deletes the thread row with its checkpoints, runs and journal rows, all or nothing.
/// True when the thread row existed.
pub(super) fn delete(conn: &mut Connection, thread_id: &str) -> Result<bool, StoreError> {
    let tx = write_transaction(conn)?;
    events::delete_for_thread(&tx, thread_id)?;
    runs::delete_for_thread(&tx, thread_id)?;
    checkpoints::delete_for_thread(&tx, thread_id)?;
    let deleted = tx.execute("DELETE FROM threads WHERE thread_id = ?1", [thread_id])?;
    tx.commit()?;
    // The delete is done; returning its space is housekeeping that a full disk may refuse, and
    // that the next delete does again.
    if let Err(err) = schema::release_free_pages(conn) {
        tracing::warn!("freeing the pages of deleted thread {thread_id}: {err}");
    }
    Ok(deleted > 0)
}

fn decode(row: &Row<'_>) -> Result<ThreadRecord, StoreError> {
    Ok(ThreadRecord {
        thread_id: row.get("thread_id")?,
        owner_id: row.get("owner_id")?,
        assistant_id: row.get("assistant_id")?,
        status: row.get("status")?,
        metadata: json_column(row, TABLE, "metadata")?,
        display_name: row.get("display_name")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}
