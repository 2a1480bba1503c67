//! The `users` table.

use rusqlite::{Connection, Row, params};

use super::StoreError;
use super::UserRecord;
use super::sql::{query_first, violates_unique};

const COLUMNS: &str =
    "id, email, password_hash, system_role, token_version, needs_setup, oauth_provider, created_at";

/// Inserts `user` with its e-mail lower-cased and returns the stored record.
pub(super) fn insert(conn: &Connection, mut user: UserRecord) -> Result<UserRecord, StoreError> {
    user.email = normalise_email(&user.email);
    let inserted = conn.execute(
        &format!("INSERT INTO users ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            user.id,
            user.email,
            user.password_hash,
            user.system_role,
            user.token_version,
            user.needs_setup,
            user.oauth_provider,
            user.created_at,
        ],
    );
    // The UNIQUE constraint decides, rather than a look-up first, so that two concurrent
    // sign-ups for one address cannot both succeed.
    match inserted {
        Ok(_) => Ok(user),
        Err(err) if violates_unique(&err, "users.email") => {
            Err(StoreError::Conflict("email already registered".to_owned()))
        }
        Err(err) if violates_unique(&err, "users.id") => {
            Err(StoreError::Conflict("user id already exists".to_owned()))
        }
        Err(err) => Err(err.into()),
    }
}

/// The user with this e-mail, ignoring case.
pub(super) fn by_email(conn: &Connection, email: &str) -> Result<Option<UserRecord>, StoreError> {
    query_first(
        conn,
        &format!("SELECT {COLUMNS} FROM users WHERE email = ?1"),
        [normalise_email(email)],
        decode,
    )
}

/// The user with this id.
pub(super) fn by_id(conn: &Connection, id: &str) -> Result<Option<UserRecord>, StoreError> {
    query_first(
        conn,
        &format!("SELECT {COLUMNS} FROM users WHERE id = ?1"),
        [id],
        decode,
    )
}

/// How many users exist.
pub(super) fn count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM users", [], |row| row.get(0))?)
}

/// The stored form of an address. The column's `COLLATE NOCASE` only folds ASCII, so addresses
/// are lower-cased here too, before both writes and look-ups.
fn normalise_email(email: &str) -> String {
    email.to_lowercase()
}

fn decode(row: &Row<'_>) -> Result<UserRecord, StoreError> {
    Ok(UserRecord {
        id: row.get("id")?,
        email: row.get("email")?,
        password_hash: row.get("password_hash")?,
        system_role: row.get("system_role")?,
        token_version: row.get("token_version")?,
        needs_setup: row.get("needs_setup")?,
        oauth_provider: row.get("oauth_provider")?,
        created_at: row.get("created_at")?,
    })
}
