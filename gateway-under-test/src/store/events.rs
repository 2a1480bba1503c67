//! The `run_events` journal: rows numbered per thread by a `seq` that the store assigns.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row, params, params_from_iter};

use super::sql::{json_column, json_text, limit_or_all, query_all, write_transaction};
use super::{EventQuery, EventRecord, NewEvent, StoreError};

const TABLE: &str = "run_events";
const COLUMNS: &str = "thread_id, seq, run_id, event_type, category, content, metadata, created_at";

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
    let last_seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE thread_id = ?1",
        [thread_id],
        |row| row.get(0),
    )?;
    let mut stored = Vec::with_capacity(events.len());
    {
        let mut insert = tx.prepare_cached(&format!(
            "INSERT INTO run_events ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        ))?;
        for (seq, event) in (last_seq + 1..).zip(events) {
            insert.execute(params![
                thread_id,
                seq,
                event.run_id,
                event.event_type,
                event.category,
                json_text(&event.content, TABLE, "content")?,
                json_text(&event.metadata, TABLE, "metadata")?,
                event.created_at,
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

    let mut rows = query_all(conn, &sql, params_from_iter(filter.args), decode)?;
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

fn decode(row: &Row<'_>) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        thread_id: row.get("thread_id")?,
        seq: row.get("seq")?,
        event: NewEvent {
            run_id: row.get("run_id")?,
            event_type: row.get("event_type")?,
            category: row.get("category")?,
            content: json_column(row, TABLE, "content")?,
            metadata: json_column(row, TABLE, "metadata")?,
            created_at: row.get("created_at")?,
        },
    })
}
