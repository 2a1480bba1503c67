//! Building a fixture from a run: boot the gateway with the real OpenAI-compatible provider
//! (wrapped to capture every call), drive the scenario as the frontend would (prompt, follow-ups,
//! then suggestions), and turn the captured calls into a fixture.

use std::path::Path;

use serde_json::{Value, json};

use crate::adapter::boot::{Extensions, ModelWiring, boot};
use crate::adapter::capture::CapturedTurns;
use crate::adapter::hermetic::ModelBlock;
use crate::core::Fixture;
use crate::driver::{Driver, RunTranscript, visible_conversation};
use crate::layer1::HarnessError;
use crate::stand_in::{Reply, STAND_IN_MODEL, StandIn};

/// What to drive: the fixture's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioMeta {
    /// Scenario id.
    pub scenario: String,
    /// UI mode (`flash`, `thinking`, `pro`, `ultra`).
    pub mode: String,
    /// The first prompt.
    pub prompt: String,
    /// Later prompts in the same thread.
    pub followups: Vec<String>,
    /// Configuration overrides applied to record and replay alike.
    pub gateway_config: Option<Value>,
}

/// The run `context` of a UI mode (`replay-and-fixtures.md` §7.5), keys in the frontend's order.
pub fn mode_context(mode: &str) -> Value {
    let (thinking, plan, subagent) = match mode {
        "flash" => (false, false, false),
        "thinking" => (true, false, false),
        "pro" => (true, true, false),
        _ => (true, true, true),
    };
    json!({"is_bootstrap": false, "mode": mode, "thinking_enabled": thinking,
           "is_plan_mode": plan, "subagent_enabled": subagent})
}

/// The result of a captured drive.
#[derive(Debug)]
pub struct Captured {
    /// The fixture built from the captured calls.
    pub fixture: Fixture,
    /// The run transcripts, for progress output and checks.
    pub transcripts: Vec<RunTranscript>,
    /// The suggestions answer, when the gateway gave one.
    pub suggestions: Option<Value>,
}

/// Drives `meta` against a gateway whose model is `block` (a real endpoint or the stand-in),
/// capturing every model call, and builds the fixture (`model` names `model_label`).
pub async fn capture_scenario(
    meta: &ScenarioMeta,
    block: ModelBlock,
    model_label: &str,
    extensions: Extensions,
) -> Result<Captured, HarnessError> {
    let origin = Path::new("<capture>");
    let captured = CapturedTurns::default();
    let booted = boot(
        ModelWiring::Capture {
            block,
            captured: captured.clone(),
        },
        meta.gateway_config.as_ref(),
        extensions,
    )
    .await
    .map_err(|source| HarnessError::Boot {
        fixture: origin.to_path_buf(),
        source,
    })?;
    let context = mode_context(&meta.mode);
    let drive = async {
        let mut driver = Driver::new(&booted.url())?;
        driver.register().await?;
        let thread_id = driver.create_thread().await?;
        let mut transcripts = Vec::new();
        for prompt in std::iter::once(&meta.prompt).chain(&meta.followups) {
            transcripts.push(driver.stream_run(&thread_id, prompt, &context).await?);
        }
        let conversation = transcripts
            .last()
            .and_then(RunTranscript::final_values)
            .map(|values| visible_conversation(&values))
            .unwrap_or_default();
        let suggestions = driver.suggestions(&thread_id, &conversation, 3).await?;
        Ok((transcripts, suggestions))
    }
    .await;
    if let Err(err) = booted.shutdown().await {
        tracing::warn!("gateway shutdown: {err}");
    }
    let (transcripts, suggestions) = drive.map_err(|source| HarnessError::Drive {
        fixture: origin.to_path_buf(),
        source,
    })?;
    let fixture = Fixture {
        scenario: meta.scenario.clone(),
        mode: meta.mode.clone(),
        model: model_label.to_string(),
        prompt: meta.prompt.clone(),
        context,
        followups: meta.followups.clone(),
        gateway_config: meta.gateway_config.clone(),
        turns: captured.turns(),
    };
    Ok(Captured {
        fixture,
        transcripts,
        suggestions: Some(suggestions),
    })
}

/// Builds a fixture from a scripted OpenAI-compatible stand-in instead of a real model. The
/// fixture's `model` is [`STAND_IN_MODEL`], so it never passes for a real model's recording.
pub async fn capture_with_stand_in(
    meta: &ScenarioMeta,
    replies: Vec<Reply>,
    extensions: Extensions,
) -> Result<Captured, HarnessError> {
    let stand_in = StandIn::start(replies)
        .await
        .map_err(|err| HarnessError::Boot {
            fixture: Path::new("<stand-in>").to_path_buf(),
            source: crate::adapter::boot::BootError::Listen(err),
        })?;
    let block = ModelBlock::Record {
        model: STAND_IN_MODEL.into(),
        api_key: "stand-in-needs-no-key".into(),
        base_url: stand_in.base_url().to_string(),
    };
    let captured = capture_scenario(meta, block, STAND_IN_MODEL, extensions).await?;
    if stand_in.remaining() > 0 {
        tracing::warn!(
            "the stand-in script has {} unused replies",
            stand_in.remaining()
        );
    }
    Ok(captured)
}
