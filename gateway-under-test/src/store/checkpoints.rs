//! The `checkpoints` table. Order is insertion order (the `ordinal` rowid alias), never
//! `created_at` or `step`, which callers may repeat.

use rusqlite::{Connection, Row, params};

use super::CheckpointRecord;
use super::StoreError;
use super::sql::{json_column, json_text, limit, query_all, query_first, violates_unique};

const TABLE: &str = "checkpoints";
const COLUMNS: &str = "thread_id, checkpoint_id, parent_checkpoint_id, step, values_json, \
                       metadata_json, created_at";

/// Stores a checkpoint; reusing a checkpoint id is a [`StoreError::Conflict`].
pub(super) fn insert(conn: &Connection, checkpoint: &CheckpointRecord) -> Result<(), StoreError> {
    let inserted = conn.execute(
        &format!("INSERT INTO checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![
            checkpoint.thread_id,
            checkpoint.checkpoint_id,
            checkpoint.parent_checkpoint_id,
            checkpoint.step,
            json_text(&checkpoint.values, TABLE, "values_json")?,
            json_text(&checkpoint.metadata, TABLE, "metadata_json")?,
            checkpoint.created_at,
        ],
    );
    match inserted {
        Ok(_) => Ok(()),
        Err(err) if violates_unique(&err, "checkpoints.checkpoint_id") => {
            Err(StoreError::Conflict(format!(
                "checkpoint {} already exists",
                checkpoint.checkpoint_id
            )))
        }
        Err(err) => Err(err.into()),
    }
}

/// The thread's most recently inserted checkpoint.
pub(super) fn latest(
    conn: &Connection,
    thread_id: &str,
) -> Result<Option<CheckpointRecord>, StoreError> {
    query_first(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM checkpoints WHERE thread_id = ?1 ORDER BY ordinal DESC LIMIT 1"
        ),
        [thread_id],
        decode,
    )
}

/// Up to `max` checkpoints of the thread, newest first; with `before`, only those inserted
/// before that checkpoint of the same thread (none when it is unknown).
pub(super) fn list(
    conn: &Connection,
    thread_id: &str,
    max: usize,
    before: Option<&str>,
) -> Result<Vec<CheckpointRecord>, StoreError> {
    // An unknown `before` makes the sub-select NULL, and `ordinal < NULL` matches nothing.
    let sql = format!(
        "SELECT {COLUMNS} FROM checkpoints
         WHERE thread_id = ?1
           AND (?2 IS NULL OR ordinal < (SELECT ordinal FROM checkpoints
                                         WHERE thread_id = ?1 AND checkpoint_id = ?2))
         ORDER BY ordinal DESC
         LIMIT ?3"
    );
    query_all(conn, &sql, params![thread_id, before, limit(max)], decode)
}

/// Deletes every checkpoint of the thread.
pub(super) fn delete_for_thread(conn: &Connection, thread_id: &str) -> Result<(), StoreError> {
    conn.execute("DELETE FROM checkpoints WHERE thread_id = ?1", [thread_id])?;
    Ok(())
}

fn decode(row: &Row<'_>) -> Result<CheckpointRecord, StoreError> {
    Ok(CheckpointRecord {
        thread_id: row.get("thread_id")?,
        checkpoint_id: row.get("checkpoint_id")?,
        parent_checkpoint_id: row.get("parent_checkpoint_id")?,
        step: row.get("step")?,
        values: json_column(row, TABLE, "values_json")?,
        metadata: json_column(row, TABLE, "metadata_json")?,
        created_at: row.get("created_at")?,
    })
}
