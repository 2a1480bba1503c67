//! The `runs` table.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, Row, ToSql, params};

use super::sql::{json_column, json_text, limit, query_all, query_first};
use super::{RunRecord, StoreError};
use crate::run_status::{MultitaskStrategy, RunStatus};

const TABLE: &str = "runs";
const COLUMNS: &str = "run_id, thread_id, owner_id, assistant_id, status, metadata, kwargs, \
                       multitask_strategy, error, stop_reason, counters, created_at, updated_at";

/// Inserts the run, or overwrites every column of the run with the same id.
pub(super) fn upsert(conn: &Connection, run: &RunRecord) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO runs ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (run_id) DO UPDATE SET
             thread_id = excluded.thread_id,
             owner_id = excluded.owner_id,
             assistant_id = excluded.assistant_id,
             status = excluded.status,
             metadata = excluded.metadata,
             kwargs = excluded.kwargs,
             multitask_strategy = excluded.multitask_strategy,
             error = excluded.error,
             stop_reason = excluded.stop_reason,
             counters = excluded.counters,
             created_at = excluded.created_at,
             updated_at = excluded.updated_at"
    );
    conn.execute(
        &sql,
        params![
            run.run_id,
            run.thread_id,
            run.owner_id,
            run.assistant_id,
            run.status,
            json_text(&run.metadata, TABLE, "metadata")?,
            json_text(&run.kwargs, TABLE, "kwargs")?,
            run.multitask_strategy,
            run.error,
            run.stop_reason,
            json_text(&run.counters, TABLE, "counters")?,
            run.created_at,
            run.updated_at,
        ],
    )?;
    Ok(())
}

/// The run with this id.
pub(super) fn get(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    query_first(
        conn,
        &format!("SELECT {COLUMNS} FROM runs WHERE run_id = ?1"),
        [run_id],
        decode,
    )
}

/// Up to `max` of the thread's runs owned by `owner_id`, latest `created_at` first. The
/// timestamps are compared as strings, which is the contract (they share one ISO format).
pub(super) fn list(
    conn: &Connection,
    thread_id: &str,
    owner_id: &str,
    max: usize,
) -> Result<Vec<RunRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs
         WHERE thread_id = ?1 AND owner_id = ?2
         ORDER BY created_at DESC
         LIMIT ?3"
    );
    query_all(conn, &sql, params![thread_id, owner_id, limit(max)], decode)
}

/// Deletes every run of the thread.
pub(super) fn delete_for_thread(conn: &Connection, thread_id: &str) -> Result<(), StoreError> {
    conn.execute("DELETE FROM runs WHERE thread_id = ?1", [thread_id])?;
    Ok(())
}

fn decode(row: &Row<'_>) -> Result<RunRecord, StoreError> {
    Ok(RunRecord {
        run_id: row.get("run_id")?,
        thread_id: row.get("thread_id")?,
        owner_id: row.get("owner_id")?,
        assistant_id: row.get("assistant_id")?,
        status: row.get("status")?,
        metadata: json_column(row, TABLE, "metadata")?,
        kwargs: json_column(row, TABLE, "kwargs")?,
        multitask_strategy: row.get("multitask_strategy")?,
        error: row.get("error")?,
        stop_reason: row.get("stop_reason")?,
        counters: json_column(row, TABLE, "counters")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

/// The enum columns are stored by name; a name the gateway does not know fails the row.
macro_rules! text_column {
    ($($name:ty),+) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                value
                    .as_str()?
                    .parse()
                    .map_err(|err| FromSqlError::Other(Box::new(err)))
            }
        }
    )+};
}

text_column!(RunStatus, MultitaskStrategy);
