//! The built-in Bedrock provider (`use = "bedrock"`, also reachable as
//! `langchain_aws:ChatBedrockConverse`, the DeerFlow spelling): AWS Bedrock's Converse API,
//! `POST {base_url}/model/{modelId}/converse`, or `/converse-stream` when streaming (AWS's
//! binary event stream, read frame by frame with `aws-smithy-eventstream`, CRCs checked), with
//! tool use, reasoning where the answer has it, and usage.
//!
//! The HTTP transport is the OpenAI provider's ([`WireChatModel`]), with this wire's request
//! body and the codec's Converse reader ([`model_wire::bedrock_converse`]). The entry's
//! `api_key`, when set, is a Bedrock API key, sent as `Authorization: Bearer` (the AWS SDKs'
//! `AWS_BEARER_TOKEN_BEDROCK`); without one, each call is signed with SigV4 (`aws-sign`, through
//! `aws-sigv4`) from the standard variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_REGION`), as boto3 reads them; a secret never sits in the
//! configuration, whose settings may be shown. A failure is named
//! as boto3 names it: the exception in the answer's `x-amzn-errortype` (`ThrottlingException`,
//! `ValidationException`, …).

use std::sync::Arc;

use model_wire::bedrock_converse::ConverseRequest;
use serde_json::{Map, Value};

use crate::config::ModelConfig;
use crate::models::openai::{Api, WireChatModel};
use crate::models::{ChatModel, ModelError, ModelProvider, ModelRequest, ProviderContext};

use super::gemini::refuse_openai_settings;
use super::openai::wire::{effective_settings, merge_extra_body};

/// The `use` string of the built-in Bedrock provider.
pub const BEDROCK_PROVIDER: &str = "bedrock";

/// The endpoint root used when a model entry has no `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

/// Settings and the `inferenceConfig` keys they become.
const INFERENCE_SETTINGS: &[(&str, &str)] = &[
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("stop", "stopSequences"),
];

/// Builds Converse models from `[[models]]` entries with `use = "bedrock"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BedrockProvider;

impl ModelProvider for BedrockProvider {
    fn build(
        &self,
        config: &ModelConfig,
        _context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        refuse_openai_settings(config, BEDROCK_PROVIDER)?;
        let model = WireChatModel::new(config, Api::BedrockConverse)?;
        let aws = aws_sign::AwsCredentials::from_vars(|name| std::env::var(name).ok());
        Ok(Arc::new(model.with_aws(aws)))
    }
}

/// The JSON body of `converse` / `converse-stream`: `messages`, `system`, `toolConfig` (only
/// when tools are bound), `inferenceConfig` from the settings (`max_tokens`, `temperature`,
/// `top_p`, `stop`; `when_thinking_enabled` overlaid first), `additionalModelRequestFields`
/// from the setting of that name, then `extra_body` merged in last. The model id and the mode
/// are in the path.
pub(crate) fn request_body(request: &ModelRequest, settings: &Map<String, Value>) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let mut body = ConverseRequest::new(
        &super::openai::conversation::messages(request),
        &super::openai::conversation::tools(request),
    );
    let mut inference = Map::new();
    for (setting, key) in INFERENCE_SETTINGS {
        if let Some(value) = effective.get(*setting).filter(|value| !value.is_null()) {
            let value = match (*key, value) {
                ("stopSequences", Value::String(one)) => {
                    Value::Array(vec![Value::String(one.clone())])
                }
                (_, other) => other.clone(),
            };
            inference.insert((*key).to_owned(), value);
        }
    }
    if !inference.is_empty() {
        body.extra
            .insert("inferenceConfig".into(), Value::Object(inference));
    }
    if let Some(fields) = effective
        .get("additional_model_request_fields")
        .filter(|value| value.is_object())
    {
        body.extra
            .insert("additionalModelRequestFields".into(), fields.clone());
    }
    merge_extra_body(&mut body.extra, &effective);
    body.to_value()
}
