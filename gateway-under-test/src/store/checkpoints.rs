//! The `checkpoints` table. Order is insertion order (the `ordinal` rowid alias), never
//! `created_at` or `step`, which callers may repeat.
//!
//! Every graph step writes a checkpoint of the whole state, and the state's `messages` list
//! only grows, so storing each checkpoint whole made a run's database size grow with
//! steps × conversation (five 1 MB tool calls cost 72 MB). Messages are therefore stored once
//! per thread in `checkpoint_messages` (deduplicated by the SHA-256 of their JSON text), and a
//! checkpoint row keeps its other values plus the list of the messages' row ids
//! (`message_refs`), so the database grows with what was said, not with the number of steps
//! (only the id list, a few bytes a message, is written again at each step). Rows written before
//! this layout (`message_refs IS NULL`) still hold their messages inline and read as before.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::CheckpointRecord;
use super::StoreError;
use super::sql::{json_column, json_text, limit, query_all, query_first, violates_unique};

const TABLE: &str = "checkpoints";
const COLUMNS: &str = "thread_id, checkpoint_id, parent_checkpoint_id, step, values_json, \
                       metadata_json, created_at, message_refs";
/// The state channel whose entries are stored once and referenced by hash.
const MESSAGES: &str = "messages";

/// Stores a checkpoint; reusing a checkpoint id is a [`StoreError::Conflict`]. Call it inside a
/// transaction: the message rows and the checkpoint row are written together.
pub(super) fn insert(conn: &Connection, checkpoint: &CheckpointRecord) -> Result<(), StoreError> {
    let (values, refs) = split_messages(conn, &checkpoint.thread_id, &checkpoint.values)?;
    let inserted = conn.execute(
        &format!("INSERT INTO checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            checkpoint.thread_id,
            checkpoint.checkpoint_id,
            checkpoint.parent_checkpoint_id,
            checkpoint.step,
            json_text(&values, TABLE, "values_json")?,
            json_text(&checkpoint.metadata, TABLE, "metadata_json")?,
            checkpoint.created_at,
            refs.map(|refs| json_text(&refs, TABLE, "message_refs"))
                .transpose()?,
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
    )?
    .map(|stored| stored.hydrate(conn, &mut HashMap::new()))
    .transpose()
}

/// The `title` channel of the thread's most recently inserted checkpoint, read without putting
/// its messages back (a thread list needs the title only).
pub(super) fn latest_title(
    conn: &Connection,
    thread_id: &str,
) -> Result<Option<Value>, StoreError> {
    let values = query_first(
        conn,
        "SELECT values_json FROM checkpoints WHERE thread_id = ?1 ORDER BY ordinal DESC LIMIT 1",
        [thread_id],
        |row| json_column(row, TABLE, "values_json"),
    )?;
    Ok(values.and_then(|mut values: Value| values.get_mut("title").map(Value::take)))
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
    // The listed checkpoints share most of their messages: each is read and parsed once.
    let mut bodies = HashMap::new();
    query_all(conn, &sql, params![thread_id, before, limit(max)], decode)?
        .into_iter()
        .map(|stored| stored.hydrate(conn, &mut bodies))
        .collect()
}

/// Deletes every checkpoint of the thread and the messages they referred to.
pub(super) fn delete_for_thread(conn: &Connection, thread_id: &str) -> Result<(), StoreError> {
    conn.execute("DELETE FROM checkpoints WHERE thread_id = ?1", [thread_id])?;
    conn.execute(
        "DELETE FROM checkpoint_messages WHERE thread_id = ?1",
        [thread_id],
    )?;
    Ok(())
}

/// A checkpoint row as stored: its messages may still be references.
struct StoredCheckpoint {
    record: CheckpointRecord,
    message_refs: Option<Value>,
}

impl StoredCheckpoint {
    /// Puts the referenced messages back into `values.messages`, at the key's original place.
    /// `bodies` holds the messages already read by this call, by row id.
    fn hydrate(
        self,
        conn: &Connection,
        bodies: &mut HashMap<i64, Value>,
    ) -> Result<CheckpointRecord, StoreError> {
        let StoredCheckpoint {
            mut record,
            message_refs,
        } = self;
        let Some(refs) = message_refs else {
            return Ok(record);
        };
        let ids = refs.as_array().ok_or_else(|| corrupt("is not a list"))?;
        let mut statement = conn.prepare_cached(
            "SELECT body FROM checkpoint_messages WHERE thread_id = ?1 AND id = ?2",
        )?;
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
            let id = id.as_i64().ok_or_else(|| corrupt("holds a non-integer"))?;
            if let Some(message) = bodies.get(&id) {
                messages.push(message.clone());
                continue;
            }
            let body: String = statement
                .query_row(params![record.thread_id, id], |row| row.get(0))
                .optional()?
                .ok_or_else(|| corrupt(&format!("names missing message {id}")))?;
            let message: Value =
                serde_json::from_str(&body).map_err(|source| StoreError::Json {
                    column: "checkpoint_messages.body".to_owned(),
                    source,
                })?;
            bodies.insert(id, message.clone());
            messages.push(message);
        }
        match record.values.as_object_mut() {
            Some(values) => {
                values.insert(MESSAGES.to_owned(), Value::Array(messages));
            }
            None => return Err(corrupt("belongs to values that are not an object")),
        }
        Ok(record)
    }
}

/// Stores each message of `values.messages` once per thread and returns the values with an
/// empty placeholder list (which keeps the key's position) and the list of the messages' row
/// ids. Ids, not hashes, are what a checkpoint keeps: the list is written again at every step,
/// so its entries must stay a few bytes long. Values without a message list are stored whole.
fn split_messages(
    conn: &Connection,
    thread_id: &str,
    values: &Value,
) -> Result<(Value, Option<Value>), StoreError> {
    let (Some(object), Some(messages)) = (
        values.as_object(),
        values.get(MESSAGES).and_then(Value::as_array),
    ) else {
        return Ok((values.clone(), None));
    };
    // Looked up first: at every step all but the newest messages are already stored.
    let mut find = conn
        .prepare_cached("SELECT id FROM checkpoint_messages WHERE thread_id = ?1 AND hash = ?2")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO checkpoint_messages (thread_id, hash, body) VALUES (?1, ?2, ?3)",
    )?;
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        let body = json_text(message, "checkpoint_messages", "body")?;
        let hash = hex::encode(Sha256::digest(body.as_bytes()));
        let known: Option<i64> = find
            .query_row(params![thread_id, hash], |row| row.get(0))
            .optional()?;
        let id = match known {
            Some(id) => id,
            None => {
                insert.execute(params![thread_id, hash, body])?;
                conn.last_insert_rowid()
            }
        };
        ids.push(Value::from(id));
    }
    // Every channel but the messages, which stay as an empty placeholder in their place; the
    // conversation itself is not copied.
    let stored = object
        .iter()
        .map(|(key, value)| {
            let value = if key == MESSAGES {
                Value::Array(Vec::new())
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect();
    Ok((Value::Object(stored), Some(Value::Array(ids))))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("checkpoints.message_refs {what}"))
}

fn decode(row: &Row<'_>) -> Result<StoredCheckpoint, StoreError> {
    let message_refs: Option<String> = row.get("message_refs")?;
    Ok(StoredCheckpoint {
        record: CheckpointRecord {
            thread_id: row.get("thread_id")?,
            checkpoint_id: row.get("checkpoint_id")?,
            parent_checkpoint_id: row.get("parent_checkpoint_id")?,
            step: row.get("step")?,
            values: json_column(row, TABLE, "values_json")?,
            metadata: json_column(row, TABLE, "metadata_json")?,
            created_at: row.get("created_at")?,
        },
        message_refs: message_refs
            .map(|text| {
                serde_json::from_str(&text).map_err(|source| StoreError::Json {
                    column: "checkpoints.message_refs".to_owned(),
                    source,
                })
            })
            .transpose()?,
    })
}
