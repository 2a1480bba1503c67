//! The `runs` table.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use rusqlite::{Connection, Row, ToSql, params};

use super::sql::{json_column, json_text, limit, query_all, query_first, write_transaction};
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
    conn.prepare_cached(&sql)?.execute(params![
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
    ])?;
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

/// Marks every `pending` or `running` run created at or before `before` as `error` with `error`
/// and `stop_reason`, and sets their threads that are still `running` to `error`, in one
/// transaction. Returns the runs changed, as `(run_id, thread_id)`.
pub(super) fn finish_orphans(
    conn: &mut Connection,
    orphan: &super::Orphaned<'_>,
) -> Result<Vec<(String, String)>, StoreError> {
    let tx = write_transaction(conn)?;
    let orphans: Vec<(String, String)> = {
        let mut statement = tx.prepare(
            "SELECT run_id, thread_id FROM runs
             WHERE status IN (?2, ?3) AND created_at <= ?1
             ORDER BY created_at",
        )?;
        let rows = statement.query_map(
            params![orphan.before, RunStatus::Pending, RunStatus::Running],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        rows.collect::<Result<_, _>>()?
    };
    for (run_id, thread_id) in &orphans {
        tx.execute(
            "UPDATE runs SET status = ?5, error = ?2, stop_reason = ?3, updated_at = ?4
             WHERE run_id = ?1",
            params![
                run_id,
                orphan.error,
                orphan.stop_reason,
                orphan.now,
                RunStatus::Error
            ],
        )?;
        tx.execute(
            "UPDATE threads SET status = 'error', updated_at = ?2
             WHERE thread_id = ?1 AND status IN ('pending', 'running')",
            params![thread_id, orphan.now],
        )?;
    }
    tx.commit()?;
    Ok(orphans)
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
