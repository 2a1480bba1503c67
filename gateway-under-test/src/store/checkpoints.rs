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

use super::StoreError;
use super::sql::{json_column, json_text, limit, query_all, query_first, violates_unique};
use super::{CheckpointRecord, MessageChanges};

const TABLE: &str = "checkpoints";
const COLUMNS: &str = "thread_id, checkpoint_id, parent_checkpoint_id, step, values_json, \
                       metadata_json, created_at, message_refs";
/// The state channel whose entries are stored once and referenced by hash.
const MESSAGES: &str = "messages";

/// Stores a checkpoint; reusing a checkpoint id is a [`StoreError::Conflict`]. Call it inside a
/// transaction: the message rows and the checkpoint row are written together.
pub(super) fn insert(conn: &Connection, checkpoint: &CheckpointRecord) -> Result<(), StoreError> {
    let (values, refs) = split_messages(conn, &checkpoint.thread_id, &checkpoint.values)?;
    insert_row(conn, checkpoint, &values, refs.as_deref())
}

/// Stores a checkpoint whose `values.messages` is its parent's list with `changes` applied;
/// `checkpoint.values` holds the other channels (its `messages`, if any, is ignored). Call it
/// inside a transaction, like [`insert`].
pub(super) fn insert_changes(
    conn: &Connection,
    checkpoint: &CheckpointRecord,
    changes: &MessageChanges,
) -> Result<(), StoreError> {
    let thread_id = &checkpoint.thread_id;
    let mut ids = match &checkpoint.parent_checkpoint_id {
        Some(parent) => parent_message_ids(conn, thread_id, parent)?,
        None => Vec::new(),
    };
    ids.resize(changes.len, None);
    let mut find = conn
        .prepare_cached("SELECT id FROM checkpoint_messages WHERE thread_id = ?1 AND hash = ?2")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO checkpoint_messages (thread_id, hash, body) VALUES (?1, ?2, ?3)",
    )?;
    for (index, message) in &changes.changed {
        let slot = ids.get_mut(*index).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "checkpoint {}: changed message {index} is past the conversation's {} messages",
                checkpoint.checkpoint_id, changes.len
            ))
        })?;
        *slot = Some(store_message(
            conn,
            &mut find,
            &mut insert,
            thread_id,
            message,
        )?);
    }
    let ids = ids
        .into_iter()
        .enumerate()
        .map(|(index, id)| {
            id.ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "checkpoint {}: message {index} is neither its parent's nor changed",
                    checkpoint.checkpoint_id
                ))
            })
        })
        .collect::<Result<Vec<i64>, StoreError>>()?;
    let mut values = checkpoint.values.clone();
    if let Some(object) = values.as_object_mut() {
        object.insert(MESSAGES.to_owned(), Value::Array(Vec::new()));
    }
    insert_row(conn, checkpoint, &values, Some(&ids))
}

/// The message row ids of checkpoint `parent`, stored first when it holds its messages inline;
/// an unknown parent is an error (the step's list would silently lose its conversation).
fn parent_message_ids(
    conn: &Connection,
    thread_id: &str,
    parent: &str,
) -> Result<Vec<Option<i64>>, StoreError> {
    let row: Option<(Option<String>, String)> = conn
        .query_row(
            "SELECT message_refs, values_json FROM checkpoints
             WHERE thread_id = ?1 AND checkpoint_id = ?2",
            [thread_id, parent],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let Some((refs, values)) = row else {
        return Err(StoreError::Corrupt(format!(
            "checkpoint {parent} of thread {thread_id} is not stored"
        )));
    };
    let ids = match refs {
        Some(refs) => {
            decode_refs(
                &serde_json::from_str(&refs).map_err(|source| StoreError::Json {
                    column: "checkpoints.message_refs".to_owned(),
                    source,
                })?,
            )?
        }
        None => {
            let values: Value =
                serde_json::from_str(&values).map_err(|source| StoreError::Json {
                    column: "checkpoints.values_json".to_owned(),
                    source,
                })?;
            match split_messages(conn, thread_id, &values)? {
                (_, Some(ids)) => ids,
                (_, None) => Vec::new(),
            }
        }
    };
    Ok(ids.into_iter().map(Some).collect())
}

/// Writes one checkpoint row; `refs` are its messages' row ids, when they are stored apart.
fn insert_row(
    conn: &Connection,
    checkpoint: &CheckpointRecord,
    values: &Value,
    refs: Option<&[i64]>,
) -> Result<(), StoreError> {
    let inserted = conn.execute(
        &format!("INSERT INTO checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            checkpoint.thread_id,
            checkpoint.checkpoint_id,
            checkpoint.parent_checkpoint_id,
            checkpoint.step,
            json_text(values, TABLE, "values_json")?,
            json_text(&checkpoint.metadata, TABLE, "metadata_json")?,
            checkpoint.created_at,
            refs.map(|refs| json_text(&encode_refs(refs), TABLE, "message_refs"))
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
        let ids = decode_refs(&refs)?;
        let mut statement = conn.prepare_cached(
            "SELECT body FROM checkpoint_messages WHERE thread_id = ?1 AND id = ?2",
        )?;
        let mut messages = Vec::with_capacity(ids.len());
        for id in ids {
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
) -> Result<(Value, Option<Vec<i64>>), StoreError> {
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
    let ids = messages
        .iter()
        .map(|message| store_message(conn, &mut find, &mut insert, thread_id, message))
        .collect::<Result<Vec<i64>, StoreError>>()?;
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
    Ok((Value::Object(stored), Some(ids)))
}

/// The row id of `message` in the thread's `checkpoint_messages`, inserted when it is new.
fn store_message(
    conn: &Connection,
    find: &mut rusqlite::CachedStatement<'_>,
    insert: &mut rusqlite::CachedStatement<'_>,
    thread_id: &str,
    message: &Value,
) -> Result<i64, StoreError> {
    let body = json_text(message, "checkpoint_messages", "body")?;
    let hash = hex::encode(Sha256::digest(body.as_bytes()));
    let known: Option<i64> = find
        .query_row(params![thread_id, hash], |row| row.get(0))
        .optional()?;
    match known {
        Some(id) => Ok(id),
        None => {
            insert.execute(params![thread_id, hash, body])?;
            Ok(conn.last_insert_rowid())
        }
    }
}

/// Row ids as runs: `[first, count]` for two or more consecutive ids, a number for a lone one.
fn encode_refs(ids: &[i64]) -> Value {
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for &id in ids {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == id => *count += 1,
            _ => runs.push((id, 1)),
        }
    }
    Value::Array(
        runs.into_iter()
            .map(|(first, count)| match count {
                1 => Value::from(first),
                _ => Value::from(vec![first, count]),
            })
            .collect(),
    )
}

/// The row ids of a `message_refs` list: numbers, and `[first, count]` runs.
fn decode_refs(refs: &Value) -> Result<Vec<i64>, StoreError> {
    let entries = refs.as_array().ok_or_else(|| corrupt("is not a list"))?;
    let mut ids = Vec::with_capacity(entries.len());
    for entry in entries {
        match (entry.as_i64(), entry.as_array().map(Vec::as_slice)) {
            (Some(id), _) => ids.push(id),
            (None, Some([first, count])) => match (first.as_i64(), count.as_i64()) {
                (Some(first), Some(count)) if count > 0 => ids.extend(first..first + count),
                _ => return Err(corrupt("holds a run that is not [first, count]")),
            },
            _ => return Err(corrupt("holds an entry that is neither an id nor a run")),
        }
    }
    Ok(ids)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{CheckpointRecord, DATABASE_FILE, MessageChanges, Store, StoreError};

    fn record(checkpoint_id: &str, parent: Option<&str>) -> CheckpointRecord {
        CheckpointRecord {
            thread_id: "t1".to_owned(),
            checkpoint_id: checkpoint_id.to_owned(),
            parent_checkpoint_id: parent.map(str::to_owned),
            step: 0,
            values: json!({"messages": [], "title": checkpoint_id}),
            metadata: json!({}),
            created_at: "2025-01-01T00:00:00Z".to_owned(),
        }
    }

    fn message(text: &str) -> serde_json::Value {
        json!({"type": "human", "content": text})
    }

    /// (message rows, the latest checkpoint's refs as stored).
    fn stored(dir: &std::path::Path) -> (i64, String) {
        let conn = rusqlite::Connection::open(dir.join(DATABASE_FILE)).expect("second connection");
        let rows = conn
            .query_row("SELECT count(*) FROM checkpoint_messages", [], |row| {
                row.get(0)
            })
            .expect("count");
        let refs = conn
            .query_row(
                "SELECT message_refs FROM checkpoints ORDER BY ordinal DESC LIMIT 1",
                [],
                |row| row.get(0),
            )
            .expect("refs");
        (rows, refs)
    }

    #[tokio::test]
    async fn a_step_stores_only_the_messages_it_changed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open store");
        let first = MessageChanges {
            len: 3,
            changed: (0..3).map(|i| (i, message(&format!("m{i}")))).collect(),
        };
        store
            .put_checkpoint_changes(record("c1", None), first)
            .await
            .expect("first step");
        // The second step replaces message 1 and appends message 3; 0 and 2 are the parent's.
        let second = MessageChanges {
            len: 4,
            changed: vec![(1, message("m1 edited")), (3, message("m3"))],
        };
        store
            .put_checkpoint_changes(record("c2", Some("c1")), second)
            .await
            .expect("second step");
        let latest = store.latest_checkpoint("t1").await.expect("read").unwrap();
        assert_eq!(
            latest.values,
            json!({"messages": [message("m0"), message("m1 edited"), message("m2"),
                                message("m3")], "title": "c2"})
        );
        assert_eq!(
            stored(dir.path()),
            (5, "[1,4,3,5]".to_owned()),
            "rows: the first step's three and the second's two; refs: ids, a run when consecutive"
        );
        let parent = store.list_checkpoints("t1", 10, None).await.expect("list");
        assert_eq!(
            parent[1].values["messages"],
            json!([message("m0"), message("m1"), message("m2")]),
            "the parent reads as it was"
        );
    }

    #[tokio::test]
    async fn consecutive_message_ids_are_stored_as_one_run() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open store");
        let changes = MessageChanges {
            len: 100,
            changed: (0..100).map(|i| (i, message(&format!("m{i}")))).collect(),
        };
        store
            .put_checkpoint_changes(record("c1", None), changes)
            .await
            .expect("step");
        assert_eq!(stored(dir.path()), (100, "[[1,100]]".to_owned()));
        let latest = store.latest_checkpoint("t1").await.expect("read").unwrap();
        assert_eq!(latest.values["messages"][99], message("m99"));
    }

    #[tokio::test]
    async fn a_message_neither_inherited_nor_changed_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open store");
        let gap = MessageChanges {
            len: 2,
            changed: vec![(1, message("only the second"))],
        };
        let err = store
            .put_checkpoint_changes(record("c1", None), gap)
            .await
            .expect_err("message 0 is missing");
        assert!(
            matches!(&err, StoreError::Corrupt(text) if text.contains("message 0")),
            "{err}"
        );
        let unknown_parent = store
            .put_checkpoint_changes(record("c2", Some("nope")), MessageChanges::default())
            .await
            .expect_err("unknown parent");
        assert!(
            matches!(&unknown_parent, StoreError::Corrupt(text) if text.contains("nope")),
            "{unknown_parent}"
        );
    }
}
