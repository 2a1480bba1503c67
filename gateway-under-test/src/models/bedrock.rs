//! The built-in Bedrock provider (`use = "bedrock"`, also reachable as
//! `langchain_aws:ChatBedrockConverse`, the DeerFlow spelling): AWS Bedrock's Converse API,
//! `POST {base_url}/model/{modelId}/converse`, or `/converse-stream` when streaming (AWS's
//! binary event stream, read frame by frame with `aws-smithy-eventstream`, CRCs checked), with
//! tool use, reasoning where the answer has it, and usage.
//!
//! The HTTP transport is the all-wire model's ([`WireChatModel`], `models/wire_model/`), with
//! this wire's request body and the codec's Converse reader ([`model_wire::bedrock_converse`]).
//! The entry's `api_key`, when set, is a Bedrock API key, sent as `Authorization: Bearer` (the
//! AWS SDKs' `AWS_BEARER_TOKEN_BEDROCK`); without one, each call is signed with SigV4
//! (`aws-sign`, through `aws-sigv4`) with the credentials of the standard variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`), as boto3
//! reads them. The binary reads them once, through `Config::apply_env`'s lookup, and the provider
//! takes them from its [`ProviderContext`]; the provider never reads the environment, and the
//! credentials never show in the configuration's `Debug` or serialised form. A failure is named
//! as boto3 names it: the exception in the answer's `x-amzn-errortype` (`ThrottlingException`,
//! `ValidationException`, …).

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::models::wire_model::{Api, WireChatModel, refuse_openai_settings};
use crate::models::{ChatModel, ModelError, ModelProvider, ProviderContext};

pub use crate::models::wire_model::bedrock_converse::DEFAULT_BASE_URL;

/// The `use` string of the built-in Bedrock provider.
pub const BEDROCK_PROVIDER: &str = "bedrock";

/// Builds Converse models from `[[models]]` entries with `use = "bedrock"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BedrockProvider;

impl ModelProvider for BedrockProvider {
    fn build(
        &self,
        config: &ModelConfig,
        context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        refuse_openai_settings(config, BEDROCK_PROVIDER)?;
        let model = WireChatModel::new(config, Api::BedrockConverse)?;
        Ok(Arc::new(model.with_aws(context.aws_credentials.clone())))
    }
}
