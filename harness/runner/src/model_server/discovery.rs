//! Ollama's discovery routes, which its clients may call before a model call: `GET /api/tags`
//! (the models), `POST /api/show` (one model's facts) and `GET /api/version`, answered from the
//! models the server replays (the fixtures' models, the recording's, or the model a recording
//! proxy has seen; `Backend::models`). They are no model calls: nothing is recorded or replayed
//! for them, and they report no problem. The answers say only what the server knows: a model's
//! name, no size, digest, date or quantisation it would have to invent
//! (`docs/testing-your-own-gateway.md`, "Ollama's native API").

use serde_json::{Value, json};

/// The version `GET /api/version` answers: no Ollama release (the server is not one), a
/// pre-release of none, so a client that gates a feature on the version relies on none.
pub(crate) const OLLAMA_VERSION: &str = "0.0.0-keyless";

/// `GET /api/tags`: each model by its name.
pub(crate) fn tags(models: &[String]) -> Value {
    let models: Vec<Value> = models
        .iter()
        .map(|name| json!({"name": name, "model": name, "details": {}}))
        .collect();
    json!({"models": models})
}

/// `POST /api/show` for `model`: its facts (none known beyond the name, so empty ones and the
/// `completion` capability every replayed model has), or `None` when no replayed model has
/// that name (Ollama answers 404).
pub(crate) fn show(models: &[String], model: &str) -> Option<Value> {
    models.iter().any(|name| name == model).then(|| {
        json!({
            "modelfile": "",
            "parameters": "",
            "template": "",
            "details": {},
            "model_info": {},
            "capabilities": ["completion"],
        })
    })
}

/// Ollama's answer to `POST /api/show` for a model it does not have.
pub(crate) fn not_found(model: &str) -> Value {
    json!({"error": format!("model '{model}' not found")})
}

/// The model `POST /api/show`'s body names (`model`, or the older `name`).
pub(crate) fn shown_model(body: &[u8]) -> Option<String> {
    let body: Value = serde_json::from_slice(body).ok()?;
    ["model", "name"]
        .iter()
        .find_map(|key| body.get(key).and_then(Value::as_str))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_names_the_replayed_models_and_only_them() {
        let models = vec!["llama3.2".to_owned()];
        assert_eq!(tags(&models)["models"][0]["name"], "llama3.2");
        assert!(show(&models, "llama3.2").is_some());
        assert!(show(&models, "mistral").is_none());
        assert_eq!(not_found("mistral")["error"], "model 'mistral' not found");
        assert_eq!(
            shown_model(br#"{"name": "llama3.2"}"#).as_deref(),
            Some("llama3.2")
        );
        assert_eq!(shown_model(b"{"), None);
    }
}
