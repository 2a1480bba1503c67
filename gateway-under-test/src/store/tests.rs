//! Behaviour tests for the store, each on its own temporary folder.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::*;
use crate::config::Synchronous;

fn open_temp() -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path()).expect("open store");
    (dir, store)
}

fn user(id: &str, email: &str) -> UserRecord {
    UserRecord {
        id: id.to_owned(),
        email: email.to_owned(),
        password_hash: "$argon2id$v=19$stub".to_owned(),
        system_role: "user".to_owned(),
        token_version: 0,
        needs_setup: false,
        oauth_provider: None,
        created_at: "2025-01-01T00:00:00Z".to_owned(),
    }
}

fn thread(thread_id: &str, owner_id: &str, updated_at: &str) -> ThreadRecord {
    ThreadRecord {
        thread_id: thread_id.to_owned(),
        owner_id: owner_id.to_owned(),
        assistant_id: Some("lead_agent".to_owned()),
        status: "idle".to_owned(),
        metadata: json!({}),
        display_name: None,
        created_at: "2025-01-01T00:00:00Z".to_owned(),
        updated_at: updated_at.to_owned(),
    }
}

fn checkpoint(thread_id: &str, checkpoint_id: &str, step: i64) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.to_owned(),
        parent_checkpoint_id: None,
        step,
        values: json!({"step": step}),
        metadata: json!({"source": "loop"}),
        created_at: "2025-01-01T00:00:00Z".to_owned(),
    }
}

fn run(run_id: &str, thread_id: &str, owner_id: &str, created_at: &str) -> RunRecord {
    RunRecord {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        owner_id: owner_id.to_owned(),
        assistant_id: "lead_agent".to_owned(),
        status: RunStatus::Pending,
        metadata: json!({"k": "v"}),
        kwargs: json!({"input": {"messages": []}, "config": {}}),
        multitask_strategy: MultitaskStrategy::Reject,
        error: None,
        stop_reason: None,
        counters: json!({"total_tokens": 0}),
        created_at: created_at.to_owned(),
        updated_at: created_at.to_owned(),
    }
}

fn event(run_id: &str, event_type: &str, category: &str) -> NewEvent {
    NewEvent {
        run_id: run_id.to_owned(),
        event_type: event_type.to_owned(),
        category: category.to_owned(),
        content: json!({"type": event_type}),
        message_id: None,
        metadata: json!({}),
        created_at: "2025-01-01T00:00:00Z".to_owned(),
    }
}

/// Appends `count` `message` rows of `run_id` to `thread_id`.
async fn append_messages(store: &Store, thread_id: &str, run_id: &str, count: usize) {
    let rows = vec![event(run_id, "llm.ai.response", "message"); count];
    store.append_events(thread_id, rows).await.expect("append");
}

fn seqs(rows: &[EventRecord]) -> Vec<i64> {
    rows.iter().map(|row| row.seq).collect()
}

fn checkpoint_ids(rows: &[CheckpointRecord]) -> Vec<&str> {
    rows.iter().map(|row| row.checkpoint_id.as_str()).collect()
}

fn thread_ids(rows: &[ThreadRecord]) -> Vec<&str> {
    rows.iter().map(|row| row.thread_id.as_str()).collect()
}

fn run_ids(rows: &[RunRecord]) -> Vec<&str> {
    rows.iter().map(|row| row.run_id.as_str()).collect()
}

// --- opening and migrations ---------------------------------------------------------------

#[tokio::test]
async fn fresh_database_is_at_the_latest_schema_version() {
    let (_dir, store) = open_temp();
    let expected = i64::try_from(schema::MIGRATIONS.len()).expect("few migrations");
    assert_eq!(store.schema_version().await.expect("version"), expected);
}

/// Every object of `conn`'s schema as text: each table's columns (name, type, not-null,
/// default, key), indexes (with their columns, order and collation) and foreign keys, and
/// `user_version`. Not the stored `CREATE` text, which `ALTER TABLE` rewrites its own way.
fn describe_schema(conn: &rusqlite::Connection) -> Vec<String> {
    let rows = |sql: &str| -> Vec<String> {
        let mut statement = conn.prepare(sql).expect(sql);
        let columns = statement.column_count();
        statement
            .query_map([], |row| {
                (0..columns)
                    .map(|i| Ok(format!("{:?}", row.get_ref(i)?)))
                    .collect::<Result<Vec<_>, rusqlite::Error>>()
                    .map(|values| values.join(" "))
            })
            .expect(sql)
            .collect::<Result<_, _>>()
            .expect(sql)
    };
    let mut described = rows("SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect())
        .expect("table names");
    for table in tables {
        for pragma in ["table_xinfo", "index_list", "foreign_key_list"] {
            for row in rows(&format!("PRAGMA {pragma}('{table}')")) {
                described.push(format!("{table} {pragma}: {row}"));
            }
        }
    }
    for index in rows("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name") {
        described.push(format!("index {index}"));
    }
    described.extend(rows("PRAGMA user_version"));
    described
}

/// The one-script schema of a fresh database is the schema every migration leaves, step by
/// step: same tables, columns in the same order with the same types, defaults and keys, same
/// indexes, same version. A migration added without its part in `FRESH_SCHEMA` fails here.
#[test]
fn a_fresh_schema_is_the_migrated_schema() {
    let mut stepped = rusqlite::Connection::open_in_memory().expect("open");
    schema::migrate_step_by_step(&mut stepped).expect("steps");
    let mut fresh = rusqlite::Connection::open_in_memory().expect("open");
    schema::migrate(&mut fresh).expect("fresh");
    let (stepped, fresh) = (describe_schema(&stepped), describe_schema(&fresh));
    assert!(
        stepped.len() > 60,
        "the description covers the schema: {stepped:#?}"
    );
    assert_eq!(fresh, stepped);
}

/// `database.backend = "memory"`: the latest schema, writes read back, nothing in the folder
/// the `sqlite` backend would use, and two stores at once are two databases (no shared lock,
/// no shared rows); a store opened again starts empty, as DeerFlow's `memory` does.
#[tokio::test]
async fn a_memory_store_is_its_own_database_and_writes_no_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = crate::config::DatabaseConfig {
        backend: crate::config::DatabaseBackend::Memory,
        ..Default::default()
    };
    let first = Store::open_with(&dir.path().join("db"), &settings).expect("open");
    let second = Store::open_with(&dir.path().join("db"), &settings).expect("a second at once");
    let expected = i64::try_from(schema::MIGRATIONS.len()).expect("few migrations");
    assert_eq!(first.schema_version().await.expect("version"), expected);
    first
        .create_thread(
            thread("t1", "u1", "2025-01-01T00:00:00Z"),
            checkpoint("t1", "c0", -1),
        )
        .await
        .expect("thread");
    assert!(first.get_thread("t1").await.expect("read").is_some());
    assert!(second.get_thread("t1").await.expect("read").is_none());
    assert!(first.delete_thread("t1").await.expect("delete"));
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "nothing written to the disk"
    );
    drop(first);
    let again = Store::open_with(&dir.path().join("db"), &settings).expect("again");
    assert!(again.get_thread("t1").await.expect("read").is_none());
}

#[tokio::test]
async fn reopening_keeps_data_and_does_not_rerun_migrations() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Store::open(dir.path()).expect("first open");
        store
            .create_user(user("u1", "a@example.com"))
            .await
            .expect("user");
        store
            .create_thread(
                thread("t1", "u1", "2025-01-01T00:00:00Z"),
                checkpoint("t1", "c0", -1),
            )
            .await
            .expect("thread");
        store
            .put_run(run("r1", "t1", "u1", "2025-01-01T00:00:01Z"))
            .await
            .expect("run");
        append_messages(&store, "t1", "r1", 3).await;
    }

    // Re-running version 1 would fail on `CREATE TABLE users`, so a successful open also shows
    // that only missing migrations run.
    let store = Store::open(dir.path()).expect("reopen");
    let expected = i64::try_from(schema::MIGRATIONS.len()).expect("few migrations");
    assert_eq!(store.schema_version().await.expect("version"), expected);
    assert!(store.user_by_id("u1").await.expect("user").is_some());
    assert!(store.get_thread("t1").await.expect("thread").is_some());
    let latest = store.latest_checkpoint("t1").await.expect("checkpoint");
    assert_eq!(latest.map(|c| c.checkpoint_id).as_deref(), Some("c0"));
    assert!(store.get_run("r1").await.expect("run").is_some());
    let rows = store
        .query_events("t1", EventQuery::default())
        .await
        .expect("events");
    assert_eq!(seqs(&rows), [1, 2, 3]);
    append_messages(&store, "t1", "r1", 1).await;
    let rows = store
        .query_events("t1", EventQuery::default())
        .await
        .expect("events");
    assert_eq!(seqs(&rows), [1, 2, 3, 4], "seq continues after a restart");
}

#[test]
fn open_under_a_file_is_an_io_error_naming_the_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"x").expect("write file");
    let target = file.join("db");
    match Store::open(&target) {
        Err(StoreError::Io { path, .. }) => assert_eq!(path, target),
        other => panic!("expected an Io error, got {other:?}"),
    }
}

#[test]
fn a_database_open_in_one_store_is_refused_to_a_second_until_the_first_closes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Store::open(dir.path()).expect("first open");
    let handle = first.clone();
    drop(first);
    match Store::open(dir.path()) {
        Err(error @ StoreError::InUse { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains(&dir.path().display().to_string())
                    && message.contains("deerflow.db.lock"),
                "the error names the folder and its lock: {message}"
            );
        }
        other => panic!("a second store on an open database: {other:?}"),
    }
    drop(handle);
    Store::open(dir.path()).expect("open again once every handle of the first is gone");
}

/// `database.synchronous` reaches SQLite on a fresh database and on one opened again: `normal`
/// (1) unless `off` (0, never a sync) is configured, as the replay harness's hermetic
/// configuration does for its throw-away databases.
#[test]
fn the_configured_synchronous_setting_holds_on_fresh_and_reopened_databases() {
    // (setting, SQLite's `PRAGMA synchronous`)
    let cases = [(Synchronous::Normal, 1), (Synchronous::Off, 0)];
    for (setting, expected) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        for opening in ["fresh", "reopened"] {
            let settings = crate::config::DatabaseConfig {
                synchronous: setting,
                ..Default::default()
            };
            let store = Store::open_with(dir.path(), &settings).expect("open store");
            let level: i64 = (store.db)
                .call_blocking(|conn| {
                    Ok(conn.pragma_query_value(None, "synchronous", |row| row.get(0))?)
                })
                .expect("PRAGMA synchronous");
            assert_eq!(level, expected, "{setting:?}, {opening}");
        }
    }
    let default = crate::config::DatabaseConfig::default().synchronous;
    assert_eq!(default, Synchronous::Normal, "the product's default syncs");
}

#[tokio::test]
async fn two_stores_do_not_share_data() {
    let (_dir_a, a) = open_temp();
    let (_dir_b, b) = open_temp();
    a.create_user(user("u1", "a@example.com"))
        .await
        .expect("user");
    append_messages(&a, "t1", "r1", 2).await;

    assert_eq!(b.count_users().await.expect("count"), 0);
    assert!(
        b.user_by_email("a@example.com")
            .await
            .expect("lookup")
            .is_none()
    );
    b.create_user(user("u1", "a@example.com"))
        .await
        .expect("same e-mail is free in another store");
    append_messages(&b, "t1", "r1", 1).await;
    let rows = b
        .query_events("t1", EventQuery::default())
        .await
        .expect("events");
    assert_eq!(seqs(&rows), [1]);
}

#[tokio::test]
async fn a_stopped_database_thread_is_reported_as_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store {
        db: Db::stopped(),
        _owner: Some(Arc::new(OwnerLock::take(dir.path()).expect("lock"))),
        reserve: Arc::new(Reserve::new(dir.path())),
    };
    assert!(matches!(store.count_users().await, Err(StoreError::Closed)));
    assert!(matches!(
        store
            .append_events("t1", vec![event("r1", "run.start", "trace")])
            .await,
        Err(StoreError::Closed)
    ));
}

#[tokio::test]
async fn the_database_thread_stops_when_the_last_handle_is_dropped() {
    let (dir, store) = open_temp();
    let clone = store.clone();
    append_messages(&clone, "t1", "r1", 1).await;
    let wal = dir.path().join(format!("{DATABASE_FILE}-wal"));
    assert!(
        wal.exists(),
        "WAL mode keeps a -wal file while the database is open"
    );

    drop(store);
    drop(clone);
    // SQLite removes the -wal file when the last connection closes, which happens only when
    // the thread has left its loop and dropped the connection.
    let deadline = Instant::now() + Duration::from_secs(10);
    while wal.exists() {
        assert!(
            Instant::now() < deadline,
            "the database thread did not stop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// --- users ---------------------------------------------------------------------------------

#[tokio::test]
async fn emails_are_unique_ignoring_case_and_stored_lower_cased() {
    let (_dir, store) = open_temp();
    let created = store
        .create_user(user("u1", "Alice@Example.COM"))
        .await
        .expect("first user");
    assert_eq!(created.email, "alice@example.com");

    let duplicate = store.create_user(user("u2", "ALICE@example.com")).await;
    match duplicate {
        Err(StoreError::Conflict(message)) => assert_eq!(message, "email already registered"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(store.count_users().await.expect("count"), 1);

    let found = store
        .user_by_email("aLiCe@example.com")
        .await
        .expect("lookup")
        .expect("found");
    assert_eq!(found, created);
    assert_eq!(store.user_by_id("u1").await.expect("lookup"), Some(created));
    assert_eq!(store.user_by_id("u2").await.expect("lookup"), None);
}

#[tokio::test]
async fn a_reused_user_id_is_a_conflict_too() {
    let (_dir, store) = open_temp();
    store
        .create_user(user("u1", "a@example.com"))
        .await
        .expect("user");
    let reused = store.create_user(user("u1", "b@example.com")).await;
    assert!(matches!(reused, Err(StoreError::Conflict(_))), "{reused:?}");
}

#[tokio::test]
async fn user_fields_round_trip() {
    let (_dir, store) = open_temp();
    let mut admin = user("default", "admin@example.com");
    admin.system_role = "admin".to_owned();
    admin.token_version = 7;
    admin.needs_setup = true;
    admin.oauth_provider = Some("github".to_owned());
    store.create_user(admin.clone()).await.expect("user");
    assert_eq!(
        store.user_by_id("default").await.expect("lookup"),
        Some(admin)
    );
}

// --- threads -------------------------------------------------------------------------------

#[tokio::test]
async fn create_thread_is_idempotent() {
    let (_dir, store) = open_temp();
    let first = thread("t1", "u1", "2025-01-01T00:00:00Z");
    let (created, was_created) = store
        .create_thread(first.clone(), checkpoint("t1", "c0", -1))
        .await
        .expect("create");
    assert!(was_created);
    assert_eq!(created, first);

    let mut second = thread("t1", "someone-else", "2025-02-02T00:00:00Z");
    second.metadata = json!({"other": true});
    let (existing, was_created) = store
        .create_thread(second, checkpoint("t1", "c-other", -1))
        .await
        .expect("create again");
    assert!(!was_created);
    assert_eq!(existing, first);
    assert_eq!(store.get_thread("t1").await.expect("get"), Some(first));

    let all = store.list_checkpoints("t1", 10, None).await.expect("list");
    assert_eq!(checkpoint_ids(&all), ["c0"]);
}

#[tokio::test]
async fn create_thread_writes_nothing_when_the_checkpoint_fails() {
    let (_dir, store) = open_temp();
    store
        .put_checkpoint(checkpoint("elsewhere", "c0", 0))
        .await
        .expect("checkpoint");
    let clash = store
        .create_thread(
            thread("t1", "u1", "2025-01-01T00:00:00Z"),
            checkpoint("t1", "c0", -1),
        )
        .await;
    assert!(matches!(clash, Err(StoreError::Conflict(_))), "{clash:?}");
    assert_eq!(store.get_thread("t1").await.expect("get"), None);
}

#[tokio::test]
async fn thread_status_and_metadata_updates() {
    let (_dir, store) = open_temp();
    store
        .create_thread(
            thread("t1", "u1", "2025-01-01T00:00:00Z"),
            checkpoint("t1", "c0", -1),
        )
        .await
        .expect("create");

    store
        .set_thread_status("t1", "running", None, "2025-01-01T00:00:01Z")
        .await
        .expect("status");
    store
        .set_thread_status(
            "t1",
            "success",
            Some("Title".to_owned()),
            "2025-01-01T00:00:02Z",
        )
        .await
        .expect("status");
    store
        .set_thread_status("t1", "idle", None, "2025-01-01T00:00:03Z")
        .await
        .expect("status");
    store
        .set_thread_metadata("t1", json!({"a": 1}), "2025-01-01T00:00:04Z")
        .await
        .expect("metadata");

    let stored = store.get_thread("t1").await.expect("get").expect("exists");
    assert_eq!(stored.status, "idle");
    assert_eq!(
        stored.display_name.as_deref(),
        Some("Title"),
        "no display name keeps the old one"
    );
    assert_eq!(stored.metadata, json!({"a": 1}));
    assert_eq!(stored.updated_at, "2025-01-01T00:00:04Z");
    assert_eq!(stored.created_at, "2025-01-01T00:00:00Z");
}

#[tokio::test]
async fn search_threads_filters_orders_and_pages() {
    let (_dir, store) = open_temp();
    let seeds = [
        (
            "t1",
            "u1",
            "2025-01-01T00:00:01Z",
            json!({"project": "x", "n": 1}),
            "idle",
        ),
        (
            "t2",
            "u1",
            "2025-01-01T00:00:03Z",
            json!({"project": "x"}),
            "idle",
        ),
        (
            "t3",
            "u1",
            "2025-01-01T00:00:02Z",
            json!({"project": "y"}),
            "idle",
        ),
        (
            "t4",
            "u1",
            "2025-01-01T00:00:04Z",
            json!({"project": "x"}),
            "running",
        ),
        (
            "t5",
            "u2",
            "2025-01-01T00:00:05Z",
            json!({"project": "x"}),
            "idle",
        ),
    ];
    for (id, owner, updated, metadata, status) in seeds {
        let mut record = thread(id, owner, updated);
        record.metadata = metadata;
        record.status = status.to_owned();
        store
            .create_thread(record, checkpoint(id, &format!("{id}-c0"), -1))
            .await
            .expect("create");
    }

    let all = store
        .search_threads("u1", json!({}), None, 100, 0)
        .await
        .expect("search");
    assert_eq!(thread_ids(&all), ["t4", "t2", "t3", "t1"]);

    let project_x = store
        .search_threads("u1", json!({"project": "x"}), None, 100, 0)
        .await
        .expect("search");
    assert_eq!(thread_ids(&project_x), ["t4", "t2", "t1"]);

    let idle_x = store
        .search_threads(
            "u1",
            json!({"project": "x"}),
            Some("idle".to_owned()),
            100,
            0,
        )
        .await
        .expect("search");
    assert_eq!(thread_ids(&idle_x), ["t2", "t1"]);

    let both_keys = store
        .search_threads("u1", json!({"project": "x", "n": 1}), None, 100, 0)
        .await
        .expect("search");
    assert_eq!(thread_ids(&both_keys), ["t1"]);

    let page = store
        .search_threads("u1", json!({"project": "x"}), None, 1, 1)
        .await
        .expect("search");
    assert_eq!(
        thread_ids(&page),
        ["t2"],
        "offset applies after the metadata filter"
    );
}

/// Finding 11 of issue 21: deleting 315 MB of threads grew the WAL from 0 to 821 MB, and it was
/// never truncated. A delete now checkpoints the WAL and truncates it.
#[tokio::test]
async fn storage_a_large_delete_leaves_the_wal_truncated() {
    let (dir, store) = open_temp();
    store
        .create_thread(
            thread("t1", "u1", "2025-01-01T00:00:00Z"),
            checkpoint("t1", "c0", -1),
        )
        .await
        .expect("create");
    for step in 0..40 {
        let mut record = checkpoint("t1", &format!("c{}", step + 1), step);
        record.values = json!({"pad": "x".repeat(100_000)});
        store.put_checkpoint(record).await.expect("checkpoint");
    }
    assert!(store.delete_thread("t1").await.expect("delete"));
    let wal = dir.path().join(format!("{DATABASE_FILE}-wal"));
    let size = std::fs::metadata(&wal).map_or(0, |meta| meta.len());
    assert_eq!(size, 0, "the WAL after the delete");
}

/// Finding 12 of issue 21: on a full disk deleting a thread failed too, so no space could be
/// freed through the API, and a run's final record was lost. A write that fails with
/// `SQLITE_FULL` gives up the disk-space reserve and is tried once more; a delete puts the
/// reserve back.
#[tokio::test]
async fn a_full_disk_gives_up_the_reserve_and_the_write_is_tried_again() {
    let (dir, store) = open_temp();
    let reserve = dir.path().join(reserve::RESERVE_FILE);
    let size = || std::fs::metadata(&reserve).map_or(0, |meta| meta.len() as usize);
    assert_eq!(size(), reserve::RESERVE_BYTES, "made at open");
    {
        use std::os::unix::fs::MetadataExt;
        let blocks = std::fs::metadata(&reserve).expect("reserve").blocks() as usize;
        assert!(
            blocks * 512 >= reserve::RESERVE_BYTES,
            "the reserve holds disk blocks, not a hole: {blocks} blocks"
        );
    }
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let written = store
        .with_reserve(|| async {
            let attempt = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if attempt == 0 {
                let full = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL);
                Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                    full, None,
                )))
            } else {
                Ok("written")
            }
        })
        .await;
    assert_eq!(written.expect("the second attempt"), "written");
    assert_eq!(size(), 0, "given up");
    assert!(!store.delete_thread("none").await.expect("delete"));
    assert_eq!(size(), reserve::RESERVE_BYTES, "put back after a delete");
}

/// `database.space_reserve = false` (the replay harness's throw-away databases): no reserve is
/// written at open or put back after a delete, and a full disk fails the write once, untried.
#[tokio::test]
async fn a_store_without_a_space_reserve_writes_none_and_gives_none_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = crate::config::DatabaseConfig {
        space_reserve: false,
        ..Default::default()
    };
    let store = Store::open_with(dir.path(), &settings).expect("open store");
    let reserve = dir.path().join(reserve::RESERVE_FILE);
    assert!(!reserve.exists(), "no reserve at open");
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let written: Result<(), StoreError> = store
        .with_reserve(|| async {
            attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let full = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL);
            Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                full, None,
            )))
        })
        .await;
    assert!(reserve::is_disk_full(&written.expect_err("a full disk")));
    assert_eq!(
        attempts.into_inner(),
        1,
        "no reserve to give up, so no second attempt"
    );
    assert!(!store.delete_thread("none").await.expect("delete"));
    assert!(!reserve.exists(), "none put back after a delete");
}

#[tokio::test]
async fn delete_thread_removes_everything_of_that_thread_only() {
    let (_dir, store) = open_temp();
    for id in ["t1", "t2"] {
        store
            .create_thread(
                thread(id, "u1", "2025-01-01T00:00:00Z"),
                checkpoint(id, &format!("{id}-c0"), -1),
            )
            .await
            .expect("create");
        store
            .put_run(run(&format!("{id}-r1"), id, "u1", "2025-01-01T00:00:00Z"))
            .await
            .expect("run");
        append_messages(&store, id, &format!("{id}-r1"), 2).await;
    }

    assert!(store.delete_thread("t1").await.expect("delete"));

    assert_eq!(store.get_thread("t1").await.expect("get"), None);
    assert_eq!(
        store.latest_checkpoint("t1").await.expect("checkpoint"),
        None
    );
    assert_eq!(store.get_run("t1-r1").await.expect("run"), None);
    let t1_events = store
        .query_events("t1", EventQuery::default())
        .await
        .expect("events");
    assert!(t1_events.is_empty());

    assert!(store.get_thread("t2").await.expect("get").is_some());
    assert!(
        store
            .latest_checkpoint("t2")
            .await
            .expect("checkpoint")
            .is_some()
    );
    assert!(store.get_run("t2-r1").await.expect("run").is_some());
    let t2_events = store
        .query_events("t2", EventQuery::default())
        .await
        .expect("events");
    assert_eq!(seqs(&t2_events), [1, 2]);

    assert!(!store.delete_thread("t1").await.expect("delete again"));
}

#[tokio::test]
async fn delete_thread_without_a_metadata_row_still_clears_runs_and_events() {
    let (_dir, store) = open_temp();
    store
        .put_run(run("r1", "seeded", "u1", "2025-01-01T00:00:00Z"))
        .await
        .expect("run");
    append_messages(&store, "seeded", "r1", 2).await;

    assert!(!store.delete_thread("seeded").await.expect("delete"));
    assert_eq!(store.get_run("r1").await.expect("run"), None);
    let rows = store
        .query_events("seeded", EventQuery::default())
        .await
        .expect("events");
    assert!(rows.is_empty());
}

// --- checkpoints ---------------------------------------------------------------------------

#[tokio::test]
async fn checkpoints_are_listed_newest_first_by_insertion_order() {
    let (_dir, store) = open_temp();
    // Steps run backwards so that ordering by step instead of insertion would show.
    for (id, step) in [("c1", 5), ("c2", 4), ("c3", 3), ("c4", 2)] {
        store
            .put_checkpoint(checkpoint("t1", id, step))
            .await
            .expect("put");
    }
    store
        .put_checkpoint(checkpoint("t2", "other", 9))
        .await
        .expect("put");

    let latest = store
        .latest_checkpoint("t1")
        .await
        .expect("latest")
        .expect("some");
    assert_eq!(latest, checkpoint("t1", "c4", 2));

    let all = store.list_checkpoints("t1", 10, None).await.expect("list");
    assert_eq!(checkpoint_ids(&all), ["c4", "c3", "c2", "c1"]);

    let two = store.list_checkpoints("t1", 2, None).await.expect("list");
    assert_eq!(checkpoint_ids(&two), ["c4", "c3"]);

    let before = store
        .list_checkpoints("t1", 10, Some("c3".to_owned()))
        .await
        .expect("list");
    assert_eq!(checkpoint_ids(&before), ["c2", "c1"]);

    let before_limited = store
        .list_checkpoints("t1", 1, Some("c3".to_owned()))
        .await
        .expect("list");
    assert_eq!(checkpoint_ids(&before_limited), ["c2"]);

    for unknown in ["nope", "other"] {
        let rows = store
            .list_checkpoints("t1", 10, Some(unknown.to_owned()))
            .await
            .expect("list");
        assert!(rows.is_empty(), "before={unknown} gave {rows:?}");
    }
    assert_eq!(store.latest_checkpoint("t9").await.expect("latest"), None);
}

#[tokio::test]
async fn a_reused_checkpoint_id_is_a_conflict() {
    let (_dir, store) = open_temp();
    store
        .put_checkpoint(checkpoint("t1", "c1", 0))
        .await
        .expect("put");
    let reused = store.put_checkpoint(checkpoint("t1", "c1", 1)).await;
    assert!(matches!(reused, Err(StoreError::Conflict(_))), "{reused:?}");
}

// --- runs ----------------------------------------------------------------------------------

#[tokio::test]
async fn put_run_inserts_then_replaces() {
    let (_dir, store) = open_temp();
    let mut record = run("r1", "t1", "u1", "2025-01-01T00:00:00Z");
    store.put_run(record.clone()).await.expect("insert");
    assert_eq!(
        store.get_run("r1").await.expect("get"),
        Some(record.clone())
    );

    record.status = RunStatus::Error;
    record.error = Some("boom".to_owned());
    record.stop_reason = Some("cancelled".to_owned());
    record.counters = json!({"total_tokens": 42, "llm_call_count": 2});
    record.updated_at = "2025-01-01T00:00:09Z".to_owned();
    store.put_run(record.clone()).await.expect("replace");
    assert_eq!(store.get_run("r1").await.expect("get"), Some(record));
    assert_eq!(store.get_run("r2").await.expect("get"), None);
}

#[tokio::test]
async fn list_runs_sorts_by_created_at_string_and_filters_owner() {
    let (_dir, store) = open_temp();
    // Inserted out of order. "…T9" is the earliest hour but the greatest string, so it comes
    // first: the contract is plain string order, not time order.
    let seeds = [
        ("r1", "u1", "2025-01-01T09:00:00Z"),
        ("r2", "u1", "2025-01-01T10:00:00Z"),
        ("r3", "u1", "2025-01-01T9"),
        ("r4", "u2", "2025-01-01T11:00:00Z"),
        ("r5", "u1", "2025-01-01T08:00:00Z"),
    ];
    for (id, owner, created_at) in seeds {
        store
            .put_run(run(id, "t1", owner, created_at))
            .await
            .expect("run");
    }
    store
        .put_run(run("r6", "t2", "u1", "2025-01-01T12:00:00Z"))
        .await
        .expect("run");

    let all = store.list_runs("t1", "u1", 100).await.expect("list");
    assert_eq!(run_ids(&all), ["r3", "r2", "r1", "r5"]);

    let limited = store.list_runs("t1", "u1", 2).await.expect("list");
    assert_eq!(run_ids(&limited), ["r3", "r2"]);

    let other_owner = store.list_runs("t1", "u2", 100).await.expect("list");
    assert_eq!(run_ids(&other_owner), ["r4"]);
}

#[tokio::test]
async fn corrupt_json_names_table_and_column() {
    let (dir, store) = open_temp();
    store
        .put_run(run("r1", "t1", "u1", "2025-01-01T00:00:00Z"))
        .await
        .expect("run");
    let raw = Connection::open(dir.path().join(DATABASE_FILE)).expect("raw connection");
    raw.execute(
        "UPDATE runs SET kwargs = '{not json' WHERE run_id = 'r1'",
        [],
    )
    .expect("corrupt");

    match store.get_run("r1").await {
        Err(StoreError::Json { column, .. }) => assert_eq!(column, "runs.kwargs"),
        other => panic!("expected a JSON error, got {other:?}"),
    }
}

// --- run events ----------------------------------------------------------------------------

#[tokio::test]
async fn append_events_returns_the_rows_with_their_seq() {
    let (_dir, store) = open_temp();
    let first = vec![
        event("r1", "run.start", "trace"),
        event("r1", "llm.human.input", "message"),
    ];
    let stored = store
        .append_events("t1", first.clone())
        .await
        .expect("append");
    assert_eq!(seqs(&stored), [1, 2]);
    assert!(stored.iter().all(|row| row.thread_id == "t1"));
    let appended: Vec<NewEvent> = stored.into_iter().map(|row| row.event).collect();
    assert_eq!(appended, first);

    let none = store
        .append_events("t1", Vec::new())
        .await
        .expect("append nothing");
    assert!(none.is_empty());
    let next = store
        .append_events("t1", vec![event("r1", "run.end", "trace")])
        .await
        .expect("append");
    assert_eq!(seqs(&next), [3]);

    let read = store
        .query_events("t1", EventQuery::default())
        .await
        .expect("query");
    assert_eq!(read[0].event.content, json!({"type": "run.start"}));
}

/// On a file (its database thread) and in memory (its callers' threads, behind a mutex) alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_keep_seq_dense_and_per_thread() {
    let (_dir, file) = open_temp();
    concurrent_appends_on(file).await;
    concurrent_appends_on(Store::open_in_memory().expect("memory")).await;
}

async fn concurrent_appends_on(store: Store) {
    const TASKS: usize = 8;
    const APPENDS: usize = 25;

    let mut handles = Vec::new();
    for task in 0..TASKS {
        for thread_id in ["a", "b"] {
            let store = store.clone();
            handles.push(tokio::spawn(async move {
                for _ in 0..APPENDS {
                    let rows = vec![event(&format!("run-{task}"), "llm.ai.response", "message")];
                    store.append_events(thread_id, rows).await.expect("append");
                }
            }));
        }
    }
    let other = store.clone();
    handles.push(tokio::spawn(async move {
        for _ in 0..APPENDS {
            let rows = vec![event("solo", "run.start", "trace"); 2];
            other.append_events("c", rows).await.expect("append");
        }
    }));
    for handle in handles {
        handle.await.expect("task");
    }

    for (thread_id, expected) in [
        ("a", TASKS * APPENDS),
        ("b", TASKS * APPENDS),
        ("c", 2 * APPENDS),
    ] {
        let rows = store
            .query_events(thread_id, EventQuery::default())
            .await
            .expect("query");
        let expected: Vec<i64> = (1..=i64::try_from(expected).expect("small")).collect();
        assert_eq!(seqs(&rows), expected, "thread {thread_id}");
    }
    // Each task's rows are numbered in the order it appended them.
    let rows = store
        .query_events("a", EventQuery::default())
        .await
        .expect("query");
    let mut per_run: BTreeMap<String, usize> = BTreeMap::new();
    for row in &rows {
        *per_run.entry(row.event.run_id.clone()).or_default() += 1;
    }
    assert_eq!(per_run.len(), TASKS);
    assert!(per_run.values().all(|&count| count == APPENDS));
}

#[tokio::test]
async fn query_events_windows() {
    let (_dir, store) = open_temp();
    append_messages(&store, "t1", "r1", 10).await;
    let window = |before_seq, after_seq, limit| EventQuery {
        before_seq,
        after_seq,
        limit,
        ..EventQuery::default()
    };
    let read = |query| {
        let store = store.clone();
        async move { seqs(&store.query_events("t1", query).await.expect("query")) }
    };

    assert_eq!(
        read(window(None, None, 0)).await,
        (1..=10).collect::<Vec<_>>()
    );
    assert_eq!(
        read(window(None, None, 3)).await,
        [8, 9, 10],
        "no cursor keeps the last rows"
    );
    assert_eq!(
        read(window(Some(6), None, 3)).await,
        [3, 4, 5],
        "before keeps the last rows"
    );
    assert_eq!(read(window(Some(3), None, 5)).await, [1, 2]);
    assert_eq!(read(window(None, Some(6), 0)).await, [7, 8, 9, 10]);
    assert_eq!(
        read(window(None, Some(2), 3)).await,
        [3, 4, 5],
        "after keeps the first rows"
    );
    assert_eq!(read(window(Some(9), Some(2), 3)).await, [3, 4, 5]);
    assert_eq!(read(window(Some(6), Some(2), 0)).await, [3, 4, 5]);
    assert!(read(window(None, Some(10), 5)).await.is_empty());
    let other_thread = store
        .query_events("t2", EventQuery::default())
        .await
        .expect("query");
    assert!(other_thread.is_empty());
}

#[tokio::test]
async fn query_events_filters_by_run_category_and_type() {
    let (_dir, store) = open_temp();
    let rows = vec![
        event("r1", "run.start", "trace"),         // 1
        event("r1", "llm.human.input", "message"), // 2
        event("r1", "llm.ai.response", "message"), // 3
        event("r1", "run.end", "trace"),           // 4
        event("r2", "run.start", "trace"),         // 5
        event("r2", "llm.human.input", "message"), // 6
        event("r2", "llm.tool.result", "message"), // 7
        event("r2", "run.end", "trace"),           // 8
    ];
    store.append_events("t1", rows).await.expect("append");
    let read = |query: EventQuery| {
        let store = store.clone();
        async move { seqs(&store.query_events("t1", query).await.expect("query")) }
    };

    let run_two = EventQuery {
        run_id: Some("r2".to_owned()),
        ..EventQuery::default()
    };
    assert_eq!(read(run_two).await, [5, 6, 7, 8]);

    let messages = EventQuery {
        category: Some("message".to_owned()),
        ..EventQuery::default()
    };
    assert_eq!(read(messages).await, [2, 3, 6, 7]);

    let last_message_of_r1 = EventQuery {
        run_id: Some("r1".to_owned()),
        category: Some("message".to_owned()),
        limit: 1,
        ..EventQuery::default()
    };
    assert_eq!(read(last_message_of_r1).await, [3]);

    let starts_and_ends = EventQuery {
        event_types: vec!["run.start".to_owned(), "run.end".to_owned()],
        ..EventQuery::default()
    };
    assert_eq!(read(starts_and_ends).await, [1, 4, 5, 8]);

    let messages_after_three = EventQuery {
        category: Some("message".to_owned()),
        after_seq: Some(3),
        limit: 1,
        ..EventQuery::default()
    };
    assert_eq!(read(messages_after_three).await, [6]);
}

/// The permission bits of `path`.
#[cfg(unix)]
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Finding 9 of issue 10: the database folder is created `0700` and the database file (and so
/// its WAL and shared-memory files, which SQLite creates with the database's mode) `0600`. The
/// file is created empty before SQLite opens it; SQLite still takes it as a new database, so it
/// gets incremental vacuum directly.
#[cfg(unix)]
#[tokio::test]
async fn database_files_are_created_private() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("db");
    let store = Store::open(&dir).expect("open store");
    store
        .create_user(user("u1", "a@example.com"))
        .await
        .expect("a write creates the WAL file");
    assert_eq!(mode_of(&dir), 0o700, "{}", dir.display());
    for file in ["deerflow.db", "deerflow.db-wal", "deerflow.db-shm"] {
        assert_eq!(mode_of(&dir.join(file)), 0o600, "{file}");
    }
    let conn = Connection::open(dir.join(DATABASE_FILE)).expect("second connection");
    let auto_vacuum: i64 = conn
        .pragma_query_value(None, "auto_vacuum", |row| row.get(0))
        .expect("auto_vacuum");
    assert_eq!(auto_vacuum, 2, "auto_vacuum should be INCREMENTAL (2)");
}

/// A database written before incremental vacuum (tables, WAL, `auto_vacuum` none) is rebuilt
/// once when it is opened, and keeps its rows; a fresh one takes the setting without a rebuild.
#[tokio::test]
async fn an_older_database_is_rebuilt_for_incremental_vacuum() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("db");
    std::fs::create_dir_all(&dir).expect("db folder");
    {
        let conn = Connection::open(dir.join(DATABASE_FILE)).expect("older database");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.execute_batch("CREATE TABLE kept (x); INSERT INTO kept VALUES (1);")
            .expect("a table");
    }
    drop(Store::open(&dir).expect("open store"));
    let conn = Connection::open(dir.join(DATABASE_FILE)).expect("second connection");
    let read = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).expect(sql) };
    assert_eq!(
        (read("PRAGMA auto_vacuum"), read("SELECT x FROM kept")),
        (2, 1),
        "(auto_vacuum INCREMENTAL, the old row kept)"
    );
}

// --- sessions -------------------------------------------------------------------------------

#[tokio::test]
async fn revoked_tokens_are_refused_until_they_expire() {
    let (_dir, store) = open_temp();
    store
        .create_user(user("u1", "a@example.com"))
        .await
        .expect("user");
    let active = |store: Store, token: &'static str| async move {
        matches!(
            store.session("u1", token).await.expect("session"),
            Session::Active(_)
        )
    };
    assert!(active(store.clone(), "t-old").await);
    store
        .revoke_token("t-old", "u1", 100, 50)
        .await
        .expect("revoke");
    store
        .revoke_token("t-old", "u1", 100, 50)
        .await
        .expect("twice is fine");
    assert_eq!(
        store.session("u1", "t-old").await.expect("session"),
        Session::Revoked
    );
    assert!(active(store.clone(), "t-other").await);
    assert_eq!(
        store.session("ghost", "t-other").await.expect("session"),
        Session::UnknownUser
    );
    // A later revocation forgets the ones whose tokens have expired by then.
    store
        .revoke_token("t-new", "u1", 500, 101)
        .await
        .expect("revoke");
    assert!(active(store.clone(), "t-old").await);
    assert_eq!(
        store.session("u1", "t-new").await.expect("session"),
        Session::Revoked
    );
}

// --- runs left unfinished by a crash ----------------------------------------------------------

#[tokio::test]
async fn orphaned_runs_are_finished_as_error_and_free_their_threads() {
    let (_dir, store) = open_temp();
    // (run, thread, status, created_at, thread status) → expected run status afterwards.
    let cases = [
        (
            "pending",
            "t1",
            RunStatus::Pending,
            "2025-01-01T00:00:01Z",
            "idle",
            RunStatus::Error,
        ),
        (
            "running",
            "t2",
            RunStatus::Running,
            "2025-01-01T00:00:02Z",
            "running",
            RunStatus::Error,
        ),
        (
            "done",
            "t3",
            RunStatus::Success,
            "2025-01-01T00:00:03Z",
            "idle",
            RunStatus::Success,
        ),
        (
            "later",
            "t4",
            RunStatus::Running,
            "2025-01-01T00:00:09Z",
            "running",
            RunStatus::Running,
        ),
    ];
    for (run_id, thread_id, status, created_at, thread_status, _) in cases {
        let mut thread = thread(thread_id, "u1", created_at);
        thread.status = thread_status.to_owned();
        store
            .create_thread(thread, checkpoint(thread_id, &format!("c-{thread_id}"), -1))
            .await
            .expect("thread");
        let mut run = run(run_id, thread_id, "u1", created_at);
        run.status = status;
        store.put_run(run).await.expect("run");
    }
    let finished = store
        .finish_orphaned_runs(Orphaned {
            before: "2025-01-01T00:00:05Z",
            error: "restarted",
            stop_reason: "gateway_restart",
            now: "2025-01-01T00:00:06Z",
        })
        .expect("finish");
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(run, thread)| (run.to_string(), thread.to_string()))
            .collect()
    };
    assert_eq!(finished, pairs(&[("pending", "t1"), ("running", "t2")]));
    for (run_id, thread_id, _, _, thread_status, expected) in cases {
        let run = store.get_run(run_id).await.expect("get").expect("run");
        assert_eq!(run.status, expected, "{run_id}");
        let thread = store
            .get_thread(thread_id)
            .await
            .expect("get")
            .expect("thread");
        let expected_thread = if thread_status == "running" && expected == RunStatus::Error {
            "error"
        } else {
            thread_status
        };
        assert_eq!(thread.status, expected_thread, "{thread_id}");
        if expected == RunStatus::Error {
            assert_eq!(run.error.as_deref(), Some("restarted"));
            assert_eq!(run.stop_reason.as_deref(), Some("gateway_restart"));
            assert_eq!(run.updated_at, "2025-01-01T00:00:06Z");
        }
    }
}
// --- checkpoint storage: messages once per thread --------------------------------------------

/// A checkpoint whose values hold `messages` between two other keys, as the agent's state does.
fn checkpoint_with(thread_id: &str, checkpoint_id: &str, messages: &[Value]) -> CheckpointRecord {
    CheckpointRecord {
        values: json!({"title": "t", "messages": messages, "sandbox": {"id": "local"}}),
        ..checkpoint(thread_id, checkpoint_id, 0)
    }
}

/// The database's size once the write-ahead log is folded in (the WAL file is reused, not
/// shrunk, so its length says nothing about the data).
fn database_bytes(dir: &Path) -> u64 {
    let path = dir.join(DATABASE_FILE);
    let conn = Connection::open(&path).expect("second connection");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint the WAL");
    std::fs::metadata(&path).expect("database file").len()
}

/// One large message, then `steps` checkpoints that each add a small one: the database must
/// grow with the messages (bounded ratio), not with steps × conversation as whole-state
/// checkpoints did (100 steps were 100× the message bytes).
#[tokio::test]
async fn checkpoint_storage_grows_with_messages_not_with_steps() {
    for steps in [1_usize, 10, 100] {
        let (dir, store) = open_temp();
        let mut messages = vec![json!({"type": "human", "content": "x".repeat(256 * 1024)})];
        for step in 0..steps {
            messages.push(json!({"type": "ai", "content": format!("step {step}")}));
            store
                .put_checkpoint(checkpoint_with("t1", &format!("c{step}"), &messages))
                .await
                .expect("checkpoint");
        }
        let message_bytes: usize = messages.iter().map(|m| m.to_string().len()).sum();
        let ratio = database_bytes(dir.path()) as f64 / message_bytes as f64;
        assert!(
            ratio < 3.0,
            "{steps} steps: database is {ratio:.1}× the {message_bytes} message bytes"
        );
    }
}

#[tokio::test]
async fn checkpoints_read_back_exactly_with_shared_messages_and_key_order() {
    let (_dir, store) = open_temp();
    let first = [json!({"type": "human", "id": "m1", "content": "hi"})];
    let both = [
        first[0].clone(),
        json!({"type": "ai", "id": "m2", "content": "yo"}),
    ];
    let written = [
        checkpoint_with("t1", "c1", &first),
        checkpoint_with("t1", "c2", &both),
        checkpoint_with("t2", "c3", &first),
        CheckpointRecord {
            values: json!({"no_messages": true}),
            ..checkpoint("t1", "c4", 1)
        },
    ];
    for record in &written {
        store.put_checkpoint(record.clone()).await.expect("put");
    }
    let listed = store.list_checkpoints("t1", 10, None).await.expect("list");
    let text = |records: &[&CheckpointRecord]| -> Vec<String> {
        records.iter().map(|r| r.values.to_string()).collect()
    };
    assert_eq!(
        text(&listed.iter().collect::<Vec<_>>()),
        text(&[&written[3], &written[1], &written[0]]),
        "values (and their key order) must read back as written"
    );

    // Deleting one thread keeps the other thread's copy of the same message.
    assert!(!store.delete_thread("t1").await.expect("delete"));
    let other = store.latest_checkpoint("t2").await.expect("read");
    assert_eq!(other.map(|r| r.values), Some(written[2].values.clone()));
}

#[tokio::test]
async fn checkpoints_written_inline_before_v2_still_read() {
    let (dir, store) = open_temp();
    let values = json!({"messages": [{"type": "human", "content": "old"}], "title": "old"});
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).expect("second connection");
    conn.execute(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, step, values_json, metadata_json, \
         created_at) VALUES ('t1', 'c-old', 0, ?1, '{}', '2025-01-01T00:00:00Z')",
        [values.to_string()],
    )
    .expect("legacy row");
    let read = store.latest_checkpoint("t1").await.expect("read");
    assert_eq!(read.map(|r| r.values.to_string()), Some(values.to_string()));
}

#[tokio::test]
async fn a_missing_referenced_message_is_a_corrupt_database_error() {
    let (dir, store) = open_temp();
    let messages = [json!({"type": "human", "content": "gone"})];
    store
        .put_checkpoint(checkpoint_with("t1", "c1", &messages))
        .await
        .expect("put");
    let conn = Connection::open(dir.path().join(DATABASE_FILE)).expect("second connection");
    conn.execute("DELETE FROM checkpoint_messages", [])
        .expect("damage");
    let err = store.latest_checkpoint("t1").await.expect_err("corrupt");
    assert!(
        matches!(&err, StoreError::Corrupt(message) if message.contains("missing message")),
        "{err}"
    );
}

#[tokio::test]
async fn deleting_a_thread_returns_its_space_to_the_file_system() {
    let (dir, store) = open_temp();
    let big = CheckpointRecord {
        values: json!({"blob": "x".repeat(2 * 1024 * 1024)}),
        ..checkpoint("t1", "c0", -1)
    };
    store
        .create_thread(thread("t1", "u1", "2025-01-01T00:00:00Z"), big)
        .await
        .expect("thread");
    let path = dir.path().join(DATABASE_FILE);
    let size = || {
        let conn = Connection::open(&path).expect("second connection");
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("checkpoint the WAL");
        std::fs::metadata(&path).expect("database file").len()
    };
    let full = size();
    assert!(store.delete_thread("t1").await.expect("delete"));
    let emptied = size();
    assert!(
        emptied < full / 4,
        "the file kept {emptied} of {full} bytes after the delete"
    );
}
