//! The `checkpoints` table. Order is insertion order (the `ordinal` rowid alias), never
//! `created_at` or `step`, which callers may repeat.
//!
//! Every graph step writes a checkpoint of the whole state, and the state's `messages` list
//! only grows, so storing each checkpoint whole made a run's database size grow with
//! steps × conversation (five 1 MB tool calls cost 72 MB). Messages are therefore stored once
//! per thread in `checkpoint_messages` (deduplicated by the SHA-256 of their JSON text), and a
//! checkpoint row keeps its other values plus the list of the messages' row ids
//! (`message_refs`), so the database grows with what was said, not with the number of steps.
//! A step's list is written as a delta over its parent's (its length and the positions it set)
//! while the deltas since the last full list are fewer entries than that list, so a step's bytes
//! are what it changed, not the conversation's length (see [`insert_changes`]). Rows written
//! before this layout (`message_refs IS NULL`) still hold their messages inline and read as
//! before; full lists written before deltas read as full lists.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::StoreError;
use super::sql::{json_column, json_text, limit, query_all, query_first, violates_unique};
use super::{CheckpointRecord, MessageChanges};

const TABLE: &str = "checkpoints";
const COLUMNS: &str = "thread_id, checkpoint_id, parent_checkpoint_id, step, values_json, \
                       metadata_json, created_at, message_refs, write_refs";
/// The state channel whose entries are stored once and referenced by hash.
const MESSAGES: &str = "messages";

/// Stores a checkpoint; reusing a checkpoint id is a [`StoreError::Conflict`]. Call it inside a
/// transaction: the message rows and the checkpoint row are written together.
pub(super) fn insert(conn: &Connection, checkpoint: &CheckpointRecord) -> Result<(), StoreError> {
    let (values, refs) = split_messages(conn, &checkpoint.thread_id, &checkpoint.values)?;
    insert_row(
        conn,
        checkpoint,
        &values,
        refs.map(|ids| encode_refs(&ids)),
        None,
    )
}

/// Stores a checkpoint whose `values.messages` is its parent's list with `changes` applied;
/// `checkpoint.values` holds the other channels (its `messages`, if any, is ignored). Call it
/// inside a transaction, like [`insert`].
///
/// The list is written as a delta over the parent's ([`Delta`]) while the deltas since the last
/// full list stay small next to it, and as a full list otherwise: an id list written whole at
/// every step grew with the conversation (an after-model hook that stamps each answer breaks the
/// list into a run per step), so a step's bytes grew with the steps before it.
pub(super) fn insert_changes(
    conn: &Connection,
    checkpoint: &CheckpointRecord,
    changes: &MessageChanges,
) -> Result<(), StoreError> {
    let thread_id = &checkpoint.thread_id;
    let parent = match &checkpoint.parent_checkpoint_id {
        Some(parent) => Some(parent_list(conn, thread_id, parent)?),
        None => None,
    };
    let parent_len = parent.as_ref().map_or(0, ParentList::len);
    // Every position past the parent's list must be written by this step.
    let mut fresh: Vec<usize> = changes
        .changed
        .iter()
        .map(|(index, _)| *index)
        .filter(|index| *index >= parent_len)
        .collect();
    fresh.sort_unstable();
    fresh.dedup();
    for (expected, index) in
        (parent_len..changes.len).zip(fresh.iter().copied().chain([usize::MAX]))
    {
        if index != expected {
            return Err(StoreError::Corrupt(format!(
                "checkpoint {}: message {expected} is neither its parent's nor changed",
                checkpoint.checkpoint_id
            )));
        }
    }
    let mut find = conn
        .prepare_cached("SELECT id FROM checkpoint_messages WHERE thread_id = ?1 AND hash = ?2")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO checkpoint_messages (thread_id, hash, body) VALUES (?1, ?2, ?3)",
    )?;
    let mut set = Vec::with_capacity(changes.changed.len());
    for (index, message) in &changes.changed {
        if *index >= changes.len {
            return Err(StoreError::Corrupt(format!(
                "checkpoint {}: changed message {index} is past the conversation's {} messages",
                checkpoint.checkpoint_id, changes.len
            )));
        }
        set.push((
            *index,
            store_message(conn, &mut find, &mut insert, thread_id, message)?,
        ));
    }
    let rows: HashMap<usize, i64> = set.iter().copied().collect();
    let refs = match parent {
        Some(ParentList::Stored { chain, .. }) if !chain.full_list_due(set.len()) => {
            let chain = chain.extended(set.len());
            encode_delta(&Delta {
                len: changes.len,
                set,
                chain,
            })
        }
        parent => {
            let mut ids = match parent {
                Some(ParentList::Stored { .. }) => {
                    let parent_id = checkpoint
                        .parent_checkpoint_id
                        .as_deref()
                        .unwrap_or_default();
                    resolve_ids(conn, thread_id, parent_id)?
                }
                Some(ParentList::Inline(ids)) => ids,
                None => Vec::new(),
            };
            ids.resize(changes.len, 0);
            for (index, id) in set {
                ids[index] = id;
            }
            encode_refs(&ids)
        }
    };
    let mut values = checkpoint.values.clone();
    if let Some(object) = values.as_object_mut() {
        object.insert(MESSAGES.to_owned(), Value::Array(Vec::new()));
    }
    let (metadata, write_refs) = split_writes(&checkpoint.metadata, &changes.writes, &rows);
    let stored = CheckpointRecord {
        metadata,
        ..checkpoint.clone()
    };
    insert_row(conn, &stored, &values, Some(refs), write_refs)
}

/// The metadata with its `writes`' messages replaced by an empty list, and the references that
/// stand for them (`{"node": <node>, "messages": [[row id, shown without id (0 or 1)], …]}`),
/// when `writes` names each of them among the rows this step stored (`rows`: position → row
/// id); otherwise the metadata as it is.
fn split_writes(
    metadata: &Value,
    writes: &[(usize, bool)],
    rows: &HashMap<usize, i64>,
) -> (Value, Option<Value>) {
    let unchanged = (metadata.clone(), None);
    let Some(nodes) = metadata.get("writes").and_then(Value::as_object) else {
        return unchanged;
    };
    let (Some((node, written)), 1) = (nodes.iter().next(), nodes.len()) else {
        return unchanged;
    };
    let count = written
        .get(MESSAGES)
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut positions: Vec<usize> = writes.iter().map(|(position, _)| *position).collect();
    positions.sort_unstable();
    positions.dedup();
    // A message written twice in one step is the state's once: its earlier write is not stored.
    if writes.is_empty() || count != writes.len() || positions.len() != writes.len() {
        return unchanged;
    }
    let Some(refs) = writes
        .iter()
        .map(|(position, unnamed)| {
            rows.get(position)
                .map(|row| serde_json::json!([row, u8::from(*unnamed)]))
        })
        .collect::<Option<Vec<Value>>>()
    else {
        return unchanged;
    };
    let mut metadata = metadata.clone();
    metadata["writes"][node][MESSAGES] = Value::Array(Vec::new());
    (
        metadata,
        Some(serde_json::json!({"node": node, "messages": refs})),
    )
}

/// Puts the referenced messages back into `metadata.writes.<node>.messages`.
fn hydrate_writes(
    conn: &Connection,
    thread_id: &str,
    metadata: &mut Value,
    write_refs: &Value,
) -> Result<(), StoreError> {
    let bad = || StoreError::Corrupt("checkpoints.write_refs is not {node, messages}".to_owned());
    let node = write_refs
        .get("node")
        .and_then(Value::as_str)
        .ok_or_else(bad)?;
    let refs = write_refs
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    let mut messages = Vec::with_capacity(refs.len());
    for entry in refs {
        let (Some(row), Some(unnamed)) = (
            entry.get(0).and_then(Value::as_i64),
            entry.get(1).and_then(Value::as_u64),
        ) else {
            return Err(bad());
        };
        let mut message = message_body(conn, thread_id, row)?;
        if unnamed == 1 {
            message["id"] = Value::Null;
        }
        messages.push(message);
    }
    match metadata
        .get_mut("writes")
        .and_then(|writes| writes.get_mut(node))
    {
        Some(Value::Object(written)) => {
            written.insert(MESSAGES.to_owned(), Value::Array(messages));
            Ok(())
        }
        _ => Err(StoreError::Corrupt(format!(
            "checkpoints.write_refs names node {node}, which the metadata's writes lack"
        ))),
    }
}

/// A checkpoint's message list, when it is written as a delta over its parent's: the list's
/// length, the positions this step set (and their row ids), and where the chain of deltas
/// stands since the last full list.
#[derive(Debug, Clone, PartialEq)]
struct Delta {
    len: usize,
    set: Vec<(usize, i64)>,
    chain: Chain,
}

/// The deltas between a checkpoint and the nearest full list above it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Chain {
    /// Deltas in the chain, this one included (0 for a full list).
    depth: usize,
    /// Entries the chain's deltas set.
    entries: usize,
    /// Entries of the full list the chain starts from.
    base_entries: usize,
}

/// Deltas read before a full list is written whatever the sizes, so reading a checkpoint walks
/// at most this many rows.
const MAX_DEPTH: usize = 256;
/// Delta entries a chain may always hold: below it a full list is never worth writing.
const MIN_CHAIN_ENTRIES: usize = 32;

impl Chain {
    /// The chain of a delta written over a full list of `base_entries` entries.
    fn over_full_list(base_entries: usize) -> Chain {
        Chain {
            depth: 0,
            entries: 0,
            base_entries,
        }
    }

    /// Whether the next step, setting `more` entries, writes a full list: once the chain's
    /// entries outgrow the full list it started from (so the full lists' bytes are paid for by
    /// as many delta entries, and a step's bytes stay what it changed), or it is
    /// [`MAX_DEPTH`] long.
    fn full_list_due(&self, more: usize) -> bool {
        self.depth + 1 > MAX_DEPTH || self.entries + more > self.base_entries.max(MIN_CHAIN_ENTRIES)
    }

    fn extended(self, more: usize) -> Chain {
        Chain {
            depth: self.depth + 1,
            entries: self.entries + more,
            base_entries: self.base_entries,
        }
    }
}

/// What a new checkpoint needs of its parent's message list.
enum ParentList {
    /// Stored as refs (a full list or a delta): its length and chain.
    Stored { len: usize, chain: Chain },
    /// Held inline by a row written before message refs: its messages, now stored, as ids.
    Inline(Vec<i64>),
}

impl ParentList {
    fn len(&self) -> usize {
        match self {
            ParentList::Stored { len, .. } => *len,
            ParentList::Inline(ids) => ids.len(),
        }
    }
}

/// The parent's list as a new checkpoint needs it, without resolving a delta; an unknown parent
/// is an error (the step's list would silently lose its conversation).
fn parent_list(conn: &Connection, thread_id: &str, parent: &str) -> Result<ParentList, StoreError> {
    // Cached, as every statement of a step: a run prepares each once, not once per step.
    let row: Option<(Option<String>, String)> = conn
        .prepare_cached(
            "SELECT message_refs, values_json FROM checkpoints
             WHERE thread_id = ?1 AND checkpoint_id = ?2",
        )?
        .query_row([thread_id, parent], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((refs, values)) = row else {
        return Err(StoreError::Corrupt(format!(
            "checkpoint {parent} of thread {thread_id} is not stored"
        )));
    };
    match refs {
        Some(refs) => Ok(match Refs::parse(&refs)? {
            Refs::Full(entries) => {
                let ids = decode_refs(&entries)?;
                ParentList::Stored {
                    len: ids.len(),
                    chain: Chain::over_full_list(entries.as_array().map_or(0, Vec::len)),
                }
            }
            Refs::Delta(delta) => ParentList::Stored {
                len: delta.len,
                chain: delta.chain,
            },
        }),
        None => {
            let values: Value =
                serde_json::from_str(&values).map_err(|source| StoreError::Json {
                    column: "checkpoints.values_json".to_owned(),
                    source,
                })?;
            Ok(ParentList::Inline(
                split_messages(conn, thread_id, &values)?
                    .1
                    .unwrap_or_default(),
            ))
        }
    }
}

/// A `message_refs` value: a full list (a JSON list of ids and runs) or a delta (an object).
enum Refs {
    Full(Value),
    Delta(Delta),
}

impl Refs {
    fn parse(text: &str) -> Result<Refs, StoreError> {
        let value: Value = serde_json::from_str(text).map_err(|source| StoreError::Json {
            column: "checkpoints.message_refs".to_owned(),
            source,
        })?;
        Refs::of(value)
    }

    fn of(value: Value) -> Result<Refs, StoreError> {
        if value.is_array() {
            return Ok(Refs::Full(value));
        }
        decode_delta(&value).map(Refs::Delta)
    }
}

/// The message row ids of checkpoint `checkpoint_id`: its full list, or the nearest full list
/// above it with the deltas between applied in order.
fn resolve_ids(
    conn: &Connection,
    thread_id: &str,
    checkpoint_id: &str,
) -> Result<Vec<i64>, StoreError> {
    let mut fetch = conn.prepare_cached(
        "SELECT message_refs, parent_checkpoint_id FROM checkpoints
         WHERE thread_id = ?1 AND checkpoint_id = ?2",
    )?;
    let mut deltas = Vec::new();
    let mut current = checkpoint_id.to_owned();
    let base = loop {
        let (refs, parent): (Option<String>, Option<String>) = fetch
            .query_row([thread_id, current.as_str()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?
            .ok_or_else(|| corrupt(&format!("names checkpoint {current}, which is not stored")))?;
        let refs = refs.ok_or_else(|| {
            corrupt(&format!(
                "is a delta over checkpoint {current}, which has no refs"
            ))
        })?;
        match Refs::parse(&refs)? {
            Refs::Full(entries) => break decode_refs(&entries)?,
            Refs::Delta(delta) => {
                deltas.push(delta);
                current = parent.ok_or_else(|| corrupt("is a delta without a parent"))?;
            }
        }
    };
    Ok(apply_deltas(base, deltas.into_iter().rev()))
}

/// `base` with each delta applied, oldest first.
fn apply_deltas(mut ids: Vec<i64>, deltas: impl Iterator<Item = Delta>) -> Vec<i64> {
    for delta in deltas {
        ids.resize(delta.len, 0);
        for (index, id) in delta.set {
            ids[index] = id;
        }
    }
    ids
}

/// `{"len": n, "set": [[position, id], …], "depth": d, "entries": e, "base": b}`.
fn encode_delta(delta: &Delta) -> Value {
    serde_json::json!({
        "len": delta.len,
        "set": delta.set.iter().map(|(index, id)| serde_json::json!([index, id])).collect::<Vec<_>>(),
        "depth": delta.chain.depth,
        "entries": delta.chain.entries,
        "base": delta.chain.base_entries,
    })
}

fn decode_delta(value: &Value) -> Result<Delta, StoreError> {
    let count = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| corrupt(&format!("is a delta without a count `{key}`")))
    };
    let len = count("len")?;
    let set = value
        .get("set")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt("is a delta without a `set` list"))?
        .iter()
        .map(|entry| match entry.as_array().map(Vec::as_slice) {
            Some([index, id]) => match (
                index.as_u64().and_then(|i| usize::try_from(i).ok()),
                id.as_i64(),
            ) {
                (Some(index), Some(id)) if index < len => Ok((index, id)),
                _ => Err(corrupt("sets a position that is not [index < len, id]")),
            },
            _ => Err(corrupt("sets an entry that is not [index, id]")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Delta {
        len,
        set,
        chain: Chain {
            depth: count("depth")?,
            entries: count("entries")?,
            base_entries: count("base")?,
        },
    })
}

/// Writes one checkpoint row; `refs` are its messages' row ids, when they are stored apart.
fn insert_row(
    conn: &Connection,
    checkpoint: &CheckpointRecord,
    values: &Value,
    refs: Option<Value>,
    write_refs: Option<Value>,
) -> Result<(), StoreError> {
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?;
    let inserted = insert.execute(params![
        checkpoint.thread_id,
        checkpoint.checkpoint_id,
        checkpoint.parent_checkpoint_id,
        checkpoint.step,
        json_text(values, TABLE, "values_json")?,
        json_text(&checkpoint.metadata, TABLE, "metadata_json")?,
        checkpoint.created_at,
        refs.map(|refs| json_text(&refs, TABLE, "message_refs"))
            .transpose()?,
        write_refs
            .map(|refs| json_text(&refs, TABLE, "write_refs"))
            .transpose()?,
    ]);
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
    write_refs: Option<Value>,
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
            write_refs,
        } = self;
        if let Some(write_refs) = &write_refs {
            hydrate_writes(conn, &record.thread_id, &mut record.metadata, write_refs)?;
        }
        let Some(refs) = message_refs else {
            return Ok(record);
        };
        let ids = match Refs::of(refs)? {
            Refs::Full(entries) => decode_refs(&entries)?,
            Refs::Delta(delta) => {
                let parent = record
                    .parent_checkpoint_id
                    .as_deref()
                    .ok_or_else(|| corrupt("is a delta without a parent"))?;
                apply_deltas(
                    resolve_ids(conn, &record.thread_id, parent)?,
                    std::iter::once(delta),
                )
            }
        };
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

/// [`store_message`] outside a checkpoint (a journal row's message). Call it inside a
/// transaction.
pub(super) fn store_message_once(
    conn: &Connection,
    thread_id: &str,
    message: &Value,
) -> Result<i64, StoreError> {
    let mut find = conn
        .prepare_cached("SELECT id FROM checkpoint_messages WHERE thread_id = ?1 AND hash = ?2")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO checkpoint_messages (thread_id, hash, body) VALUES (?1, ?2, ?3)",
    )?;
    store_message(conn, &mut find, &mut insert, thread_id, message)
}

/// The stored message `id` of the thread; a missing row is a corrupt database.
pub(super) fn message_body(
    conn: &Connection,
    thread_id: &str,
    id: i64,
) -> Result<Value, StoreError> {
    let mut statement = conn
        .prepare_cached("SELECT body FROM checkpoint_messages WHERE thread_id = ?1 AND id = ?2")?;
    let body: String = statement
        .query_row(params![thread_id, id], |row| row.get(0))
        .optional()?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "message row {id} of thread {thread_id} is not stored"
            ))
        })?;
    serde_json::from_str(&body).map_err(|source| StoreError::Json {
        column: "checkpoint_messages.body".to_owned(),
        source,
    })
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
    let write_refs: Option<String> = row.get("write_refs")?;
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
        write_refs: write_refs
            .map(|text| {
                serde_json::from_str(&text).map_err(|source| StoreError::Json {
                    column: "checkpoints.write_refs".to_owned(),
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
            writes: Vec::new(),
        };
        store
            .put_checkpoint_changes(record("c1", None), first)
            .await
            .expect("first step");
        // The second step replaces message 1 and appends message 3; 0 and 2 are the parent's.
        let second = MessageChanges {
            len: 4,
            changed: vec![(1, message("m1 edited")), (3, message("m3"))],
            writes: Vec::new(),
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
            (
                5,
                r#"{"len":4,"set":[[1,4],[3,5]],"depth":1,"entries":2,"base":1}"#.to_owned()
            ),
            "rows: the first step's three and the second's two; refs: a delta over the parent's"
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
            writes: Vec::new(),
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
            writes: Vec::new(),
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
    /// A run of `steps` steps as the agent loop writes them: each appends an answer, then
    /// replaces it (an after-model hook's stamp) and appends a tool result, so the message rows
    /// never form one run of ids.
    async fn stamped_run(store: &Store, steps: usize) -> Vec<serde_json::Value> {
        let mut messages = vec![message("q")];
        store
            .put_checkpoint_changes(
                record("c0", None),
                MessageChanges {
                    len: 1,
                    changed: vec![(0, message("q"))],
                    writes: Vec::new(),
                },
            )
            .await
            .expect("first step");
        for step in 0..steps {
            let answer = messages.len();
            let writes = [
                vec![(answer, message(&format!("answer {step}")))],
                vec![
                    (answer, message(&format!("answer {step}, stamped"))),
                    (answer + 1, message(&format!("result {step}"))),
                ],
            ];
            for (part, changed) in writes.into_iter().enumerate() {
                let id = format!("c{step}.{part}");
                let parent = match part {
                    0 if step == 0 => "c0".to_owned(),
                    0 => format!("c{}.1", step - 1),
                    _ => format!("c{step}.0"),
                };
                for (index, body) in &changed {
                    messages.resize(index + 1, serde_json::Value::Null);
                    messages[*index] = body.clone();
                }
                let changes = MessageChanges {
                    len: messages.len(),
                    changed,
                    writes: Vec::new(),
                };
                store
                    .put_checkpoint_changes(record(&id, Some(&parent)), changes)
                    .await
                    .expect("step");
            }
        }
        messages
    }

    /// Bytes of every checkpoint's `message_refs`.
    fn refs_bytes(dir: &std::path::Path) -> usize {
        let conn = rusqlite::Connection::open(dir.join(DATABASE_FILE)).expect("second connection");
        conn.query_row(
            "SELECT COALESCE(SUM(length(message_refs)), 0) FROM checkpoints",
            [],
            |row| row.get::<_, i64>(0),
        )
        .expect("sum") as usize
    }

    #[tokio::test]
    async fn a_step_writes_refs_for_what_it_changed_not_for_the_conversation() {
        let mut per_step = Vec::new();
        for steps in [10, 100, 400] {
            let dir = tempfile::tempdir().expect("temp dir");
            let store = Store::open(dir.path()).expect("open store");
            let expected = stamped_run(&store, steps).await;
            let latest = store.latest_checkpoint("t1").await.expect("read").unwrap();
            assert_eq!(latest.values["messages"], json!(expected), "{steps} steps");
            let history = store.list_checkpoints("t1", 3, None).await.expect("list");
            assert_eq!(
                history[2].values["messages"].as_array().map(Vec::len),
                Some(expected.len() - 2),
                "an older checkpoint reads as it was"
            );
            per_step.push((steps, refs_bytes(dir.path()) as f64 / steps as f64));
        }
        let (first, last) = (per_step[0].1, per_step[per_step.len() - 1].1);
        assert!(
            last < first * 1.5,
            "refs bytes per step grow with the conversation: {per_step:?}"
        );
    }
    #[tokio::test]
    async fn the_writes_name_the_stored_messages_and_read_as_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open store");
        let named = json!({"type": "ai", "content": "answer", "id": "a1"});
        let result = json!({"type": "tool", "content": "result", "id": "t1"});
        let mut checkpoint = record("c1", None);
        let shown_result = json!({"type": "tool", "content": "result", "id": null});
        checkpoint.metadata = json!({"step": 1, "writes": {"tools": {
            "messages": [named.clone(), shown_result.clone()], "title": "x"}}});
        let changes = MessageChanges {
            len: 2,
            changed: vec![(0, named.clone()), (1, result.clone())],
            writes: vec![(0, false), (1, true)],
        };
        store
            .put_checkpoint_changes(checkpoint.clone(), changes)
            .await
            .expect("step");
        let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).expect("open");
        let (metadata, refs): (String, String) = conn
            .query_row(
                "SELECT metadata_json, write_refs FROM checkpoints",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("row");
        assert_eq!(
            (metadata.as_str(), refs.as_str()),
            (
                r#"{"step":1,"writes":{"tools":{"messages":[],"title":"x"}}}"#,
                r#"{"node":"tools","messages":[[1,0],[2,1]]}"#
            )
        );
        let read = store.latest_checkpoint("t1").await.expect("read").unwrap();
        assert_eq!(
            read.metadata, checkpoint.metadata,
            "the writes read as written"
        );
    }
}
