//! Helpers shared by the table modules: running queries whose rows decode fallibly, JSON
//! columns, `LIMIT` values, write transactions and constraint errors.

use rusqlite::{Connection, ErrorCode, Params, Row, Transaction, TransactionBehavior};
use serde_json::Value;

use super::StoreError;

/// Decodes one row; JSON columns make decoding fail with [`StoreError::Json`], which a
/// `rusqlite` row-mapping closure could not report.
pub(super) type Decode<T> = fn(&Row<'_>) -> Result<T, StoreError>;

/// Every row of the query, decoded.
pub(super) fn query_all<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    decode: Decode<T>,
) -> Result<Vec<T>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    let mut decoded = Vec::new();
    while let Some(row) = rows.next()? {
        decoded.push(decode(row)?);
    }
    Ok(decoded)
}

/// The first row of the query, decoded, if there is one.
pub(super) fn query_first<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    decode: Decode<T>,
) -> Result<Option<T>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    rows.next()?.map(decode).transpose()
}

/// Starts a transaction that holds the write lock from its first statement, so it never has to
/// upgrade a read lock mid-way (which SQLite answers with `SQLITE_BUSY` instead of waiting).
pub(super) fn write_transaction(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Serialises a JSON column.
pub(super) fn json_text(value: &Value, table: &str, column: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| json_error(table, column, source))
}

/// Reads and parses the JSON column `column` of a `table` row.
pub(super) fn json_column(row: &Row<'_>, table: &str, column: &str) -> Result<Value, StoreError> {
    let text: String = row.get(column)?;
    serde_json::from_str(&text).map_err(|source| json_error(table, column, source))
}

fn json_error(table: &str, column: &str, source: serde_json::Error) -> StoreError {
    StoreError::Json {
        column: format!("{table}.{column}"),
        source,
    }
}

/// A `LIMIT` value for "at most `limit` rows".
pub(super) fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Like [`limit`], but `0` means no limit (SQLite reads a negative `LIMIT` as unbounded).
pub(super) fn limit_or_all(limit: usize) -> i64 {
    match limit {
        0 => -1,
        n => self::limit(n),
    }
}

/// Whether `err` is a UNIQUE or PRIMARY KEY violation on `target` (`table.column`).
pub(super) fn violates_unique(err: &rusqlite::Error, target: &str) -> bool {
    let rusqlite::Error::SqliteFailure(failure, Some(message)) = err else {
        return false;
    };
    // SQLite names the columns after this prefix; the extended code alone cannot tell which
    // unique constraint of the table failed.
    failure.code == ErrorCode::ConstraintViolation
        && message
            .strip_prefix("UNIQUE constraint failed: ")
            .is_some_and(|columns| columns == target)
}
