//! The `revoked_tokens` table: session tokens revoked by logout, and the per-request look-up of
//! a session's user that honours it.

use rusqlite::{Connection, params};

use super::{Session, StoreError, users};

/// Records `token_id` as revoked until `expires_at` (epoch seconds), and forgets the revocations
/// of tokens that expired before `now`: an expired token is refused anyway.
pub(super) fn revoke(
    conn: &Connection,
    token_id: &str,
    user_id: &str,
    expires_at: i64,
    now: i64,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR IGNORE INTO revoked_tokens (token_id, user_id, expires_at) VALUES (?1, ?2, ?3)",
        params![token_id, user_id, expires_at],
    )?;
    conn.execute("DELETE FROM revoked_tokens WHERE expires_at < ?1", [now])?;
    Ok(())
}

/// The user of a session: its user's record, unless the token was revoked or the user is gone.
pub(super) fn session(
    conn: &Connection,
    user_id: &str,
    token_id: &str,
) -> Result<Session, StoreError> {
    let revoked: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM revoked_tokens WHERE token_id = ?1)")?
        .query_row([token_id], |row| row.get(0))?;
    if revoked {
        return Ok(Session::Revoked);
    }
    Ok(match users::by_id(conn, user_id)? {
        Some(user) => Session::Active(user),
        None => Session::UnknownUser,
    })
}
