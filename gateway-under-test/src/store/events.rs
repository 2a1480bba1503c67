//! The `run_events` journal: rows numbered per thread by a `seq` that the store assigns.
//!
//! A `message` row names its message's `checkpoint_messages` row (`message_ref`) instead of
//! holding a copy: the state's checkpoints hold the same message, and it is stored once
//! (issue 21, finding 11). Its `content` then keeps only what the journal shows differently
//! (the `id` of a message journaled before the state named it).

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row, params, params_from_iter};

use serde_json::Value;

use super::checkpoints;
use super::sql::{json_column, json_text, limit_or_all, query_all, write_transaction};
use super::{EventQuery, EventRecord, NewEvent, StoreError};

const TABLE: &str = "run_events";
const COLUMNS: &str =
    "thread_id, seq, run_id, event_type, category, content, metadata, created_at, message_ref";

/// Appends `events` to the thread's journal in one transaction, numbering them after the
/// thread's highest `seq` (the first row of a thread gets 1).
///
/// Reading the maximum and inserting in one transaction on the single database thread is what
/// keeps `seq` gap-free and unique under concurrent callers.
pub(super) fn append(
    conn: &mut Connection,
    thread_id: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<EventRecord>, StoreError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let tx = write_transaction(conn)?;
    let last_seq: i64 = tx
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE thread_id = ?1")?
        .query_row([thread_id], |row| row.get(0))?;
    let mut stored = Vec::with_capacity(events.len());
    {
        let mut insert = tx.prepare_cached(&format!(
            "INSERT INTO run_events ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))?;
        for (seq, event) in (last_seq + 1..).zip(events) {
            let (content, message_ref) = match as_message(&event) {
                Some(body) => {
                    let row = checkpoints::store_message_once(&tx, thread_id, &body)?;
                    (shown_apart(&event.content, &body), Some(row))
                }
                None => (event.content.clone(), None),
            };
            insert.execute(params![
                thread_id,
                seq,
                event.run_id,
                event.event_type,
                event.category,
                json_text(&content, TABLE, "content")?,
                json_text(&event.metadata, TABLE, "metadata")?,
                event.created_at,
                message_ref,
            ])?;
            stored.push(EventRecord {
                thread_id: thread_id.to_owned(),
                seq,
                event,
            });
        }
    }
    tx.commit()?;
    Ok(stored)
}

/// The message a `message` row journals, as the thread's state holds it (with the state's id
/// when the row shows none): stored once in `checkpoint_messages`, which the row then names.
/// Other rows (traces, a non-object content) are stored inline.
fn as_message(event: &NewEvent) -> Option<Value> {
    if event.category != "message" || !event.content.get("type").is_some_and(Value::is_string) {
        return None;
    }
    let mut body = event.content.clone();
    if let (Some(id), Some(object)) = (&event.message_id, body.as_object_mut()) {
        object.insert("id".to_owned(), Value::String(id.clone()));
    }
    Some(body)
}

/// What a referencing row keeps in `content`: the fields whose journaled value differs from the
/// stored message's (only `id`, for a message journaled before the state named it).
fn shown_apart(content: &Value, body: &Value) -> Value {
    let mut apart = serde_json::Map::new();
    if content.get("id") != body.get("id") {
        apart.insert(
            "id".to_owned(),
            content.get("id").cloned().unwrap_or(Value::Null),
        );
    }
    Value::Object(apart)
}

/// The thread's rows matching `query`, in ascending `seq`.
///
/// With `after_seq` the window is the first `limit` rows past the cursor; otherwise it is the
/// last `limit` rows (before `before_seq` when given), read newest first and then reversed.
pub(super) fn query(
    conn: &Connection,
    thread_id: &str,
    query: &EventQuery,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut filter = Filter::new(thread_id);
    if let Some(run_id) = &query.run_id {
        filter.and("run_id = ?", [run_id.clone().into()]);
    }
    if let Some(category) = &query.category {
        filter.and("category = ?", [category.clone().into()]);
    }
    if !query.event_types.is_empty() {
        let marks = vec!["?"; query.event_types.len()].join(", ");
        let types = query.event_types.iter().map(|t| t.clone().into());
        filter.and(&format!("event_type IN ({marks})"), types);
    }
    if let Some(before) = query.before_seq {
        filter.and("seq < ?", [before.into()]);
    }
    if let Some(after) = query.after_seq {
        filter.and("seq > ?", [after.into()]);
    }

    let keep_last = query.after_seq.is_none();
    let order = if keep_last { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT {COLUMNS} FROM run_events WHERE {} ORDER BY seq {order} LIMIT ?",
        filter.sql
    );
    filter.args.push(limit_or_all(query.limit).into());

    let mut rows = query_all(conn, &sql, params_from_iter(filter.args), decode)?
        .into_iter()
        .map(|(record, message_ref)| hydrate(conn, record, message_ref))
        .collect::<Result<Vec<_>, _>>()?;
    if keep_last {
        rows.reverse();
    }
    Ok(rows)
}

/// Deletes every journal row of the thread.
pub(super) fn delete_for_thread(conn: &Connection, thread_id: &str) -> Result<(), StoreError> {
    conn.execute("DELETE FROM run_events WHERE thread_id = ?1", [thread_id])?;
    Ok(())
}

/// A `WHERE` clause built from optional conditions, with its positional arguments in order.
struct Filter {
    sql: String,
    args: Vec<SqlValue>,
}

impl Filter {
    fn new(thread_id: &str) -> Self {
        Self {
            sql: "thread_id = ?".to_owned(),
            args: vec![thread_id.to_owned().into()],
        }
    }

    fn and(&mut self, condition: &str, args: impl IntoIterator<Item = SqlValue>) {
        self.sql.push_str(" AND ");
        self.sql.push_str(condition);
        self.args.extend(args);
    }
}

/// A row as stored, and the message row its content names, if any.
fn decode(row: &Row<'_>) -> Result<(EventRecord, Option<i64>), StoreError> {
    let record = EventRecord {
        thread_id: row.get("thread_id")?,
        seq: row.get("seq")?,
        event: NewEvent {
            run_id: row.get("run_id")?,
            event_type: row.get("event_type")?,
            category: row.get("category")?,
            content: json_column(row, TABLE, "content")?,
            message_id: None,
            metadata: json_column(row, TABLE, "metadata")?,
            created_at: row.get("created_at")?,
        },
    };
    Ok((record, row.get("message_ref")?))
}

/// Puts a referenced message back into the row's content, with the fields the row keeps apart
/// laid over it, so the row reads as it was journaled.
fn hydrate(
    conn: &Connection,
    mut record: EventRecord,
    message_ref: Option<i64>,
) -> Result<EventRecord, StoreError> {
    let Some(message_ref) = message_ref else {
        return Ok(record);
    };
    let mut body = checkpoints::message_body(conn, &record.thread_id, message_ref)?;
    if let (Some(body), Value::Object(apart)) = (body.as_object_mut(), &record.event.content) {
        for (key, value) in apart {
            body.insert(key.clone(), value.clone());
        }
    }
    record.event.content = body;
    Ok(record)
}
