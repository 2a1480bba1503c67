//! Pagination properties of `GET /api/threads/{id}/messages/page` over random journals and
//! page sizes: the pages, read backwards from the newest, join into the whole visible history
//! in ascending `seq` without duplicates, and `has_more` / `next_before_seq` agree.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use gateway_under_test::store::{NewEvent, RunRecord};

use crate::vocabulary::*;

/// One journal row: which run wrote it and what it is.
#[derive(Debug, Clone, Copy)]
enum Row {
    Human,
    Ai,
    /// An AI response of a middleware model call (a title): never visible.
    MiddlewareAi,
    Tool,
}

/// Runs (owned by the caller or by someone else) and their rows, interleaved in write order.
#[derive(Debug, Clone)]
struct Journal {
    own_runs: Vec<bool>,
    rows: Vec<(usize, Row)>,
}

fn journal() -> impl Strategy<Value = Journal> {
    prop::collection::vec(prop::bool::weighted(0.8), 1..5).prop_flat_map(|own_runs| {
        let runs = own_runs.len();
        let row = prop_oneof![
            Just(Row::Human),
            Just(Row::Ai),
            Just(Row::MiddlewareAi),
            Just(Row::Tool)
        ];
        prop::collection::vec((0..runs, row), 0..40).prop_map(move |rows| Journal {
            own_runs: own_runs.clone(),
            rows,
        })
    })
}

fn event(run_id: &str, row: Row) -> NewEvent {
    let (event_type, kind, caller) = match row {
        Row::Human => ("llm.human.input", "human", json!({"caller": "lead_agent"})),
        Row::Ai => ("llm.ai.response", "ai", json!({"caller": "lead_agent"})),
        Row::MiddlewareAi => (
            "llm.ai.response",
            "ai",
            json!({"caller": "middleware:title"}),
        ),
        Row::Tool => ("llm.tool.result", "tool", json!({})),
    };
    NewEvent {
        run_id: run_id.into(),
        event_type: event_type.into(),
        category: "message".into(),
        content: json!({"type": kind, "content": "x", "additional_kwargs": {}}),
        message_id: None,
        metadata: caller,
        created_at: "2026-01-01T00:00:00.000000+00:00".into(),
    }
}

fn run_record(run_id: &str, thread_id: &str, owner_id: &str) -> RunRecord {
    RunRecord {
        updated_at: "2026-01-01T00:00:03.500000+00:00".into(),
        ..RunRecord::seeded(
            run_id,
            thread_id,
            owner_id,
            "2026-01-01T00:00:00.000000+00:00",
        )
    }
}

/// Writes the journal into a fresh thread of `client`; returns the thread and the visible seqs.
async fn seed(
    gateway: &TestGateway,
    client: &TestClient,
    user_id: &str,
    journal: &Journal,
) -> (String, Vec<i64>) {
    let store = gateway.gateway.app().store();
    let thread_id = client.create_thread().await;
    let run_ids: Vec<String> = (0..journal.own_runs.len())
        .map(|index| format!("{thread_id}-r{index}"))
        .collect();
    for (run_id, own) in run_ids.iter().zip(&journal.own_runs) {
        let owner = if *own { user_id } else { "someone-else" };
        store
            .put_run(run_record(run_id, &thread_id, owner))
            .await
            .unwrap();
    }
    let mut visible = Vec::new();
    for (run, row) in &journal.rows {
        let stored = store
            .append_events(&thread_id, vec![event(&run_ids[*run], *row)])
            .await
            .unwrap();
        if journal.own_runs[*run] && !matches!(row, Row::MiddlewareAi) {
            visible.push(stored[0].seq);
        }
    }
    (thread_id, visible)
}

/// Reads every page backwards; checks each page on the way and returns the seqs, oldest first.
async fn read_all_pages(
    client: &TestClient,
    thread_id: &str,
    page_size: usize,
) -> Result<Vec<i64>, TestCaseError> {
    let mut pages: Vec<Vec<i64>> = Vec::new();
    let mut cursor: Option<i64> = None;
    loop {
        let mut path = format!("/api/threads/{thread_id}/messages/page?limit={page_size}");
        if let Some(before) = cursor {
            path.push_str(&format!("&before_seq={before}"));
        }
        let (status, page) = client.get(&path).await;
        prop_assert_eq!(status, 200, "{} {}", path, page);
        let seqs: Vec<i64> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["seq"].as_i64().unwrap())
            .collect();
        prop_assert!(seqs.len() <= page_size, "{}: {:?}", path, seqs);
        prop_assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "ascending: {:?}",
            seqs
        );
        if let Some(before) = cursor {
            prop_assert!(
                seqs.iter().all(|seq| *seq < before),
                "before the cursor: {:?}",
                seqs
            );
        }
        let has_more = page["has_more"].as_bool().unwrap();
        if has_more {
            prop_assert_eq!(seqs.len(), page_size, "a page with more behind it is full");
            prop_assert_eq!(&page["next_before_seq"], &json!(seqs[0]));
        } else {
            prop_assert_eq!(&page["next_before_seq"], &Value::Null);
        }
        pages.push(seqs);
        if !has_more {
            break;
        }
        cursor = page["next_before_seq"].as_i64();
    }
    Ok(pages.into_iter().rev().flatten().collect())
}

#[test]
fn pages_join_into_the_whole_visible_history() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let gateway = runtime.block_on(spawn_gateway());
    let mut client = gateway.client();
    let user = runtime.block_on(client.register());
    let user_id = user["id"].as_str().unwrap().to_string();
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (journal(), 1usize..12);
    let outcome = runner.run(&strategy, |(journal, page_size)| {
        runtime.block_on(async {
            let (thread_id, visible) = seed(&gateway, &client, &user_id, &journal).await;
            let joined = read_all_pages(&client, &thread_id, page_size).await?;
            prop_assert_eq!(joined, visible, "page size {}", page_size);
            Ok(())
        })
    });
    runtime.block_on(gateway.stop());
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
