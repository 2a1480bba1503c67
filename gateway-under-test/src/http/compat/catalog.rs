//! What the web client reads once per page: the configured models, the feature flags, the
//! skills on disk and the channel providers.

use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use crate::app::{App, WebClientSettings};
use crate::http::ApiError;
use crate::http::guard::CurrentUser;

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/models", get(models))
        .route("/api/features", get(features))
        .route("/api/skills", get(skills))
        .route("/api/channels/providers", get(channel_providers))
}

/// `{"models": [{"name", "model", "display_name", "description", "supports_thinking",
/// "supports_reasoning_effort"}], "token_usage": {"enabled"}}`, in configuration order. `model`
/// is the provider's model id, or the name when none is configured.
async fn models(State(settings): State<Arc<WebClientSettings>>, _user: CurrentUser) -> Json<Value> {
    let models: Vec<Value> = settings
        .models
        .iter()
        .map(|model| {
            json!({
                "name": model.name,
                "model": model.model,
                "display_name": model.display_name,
                "description": model.description,
                "supports_thinking": model.supports_thinking,
                "supports_reasoning_effort": model.supports_reasoning_effort,
            })
        })
        .collect();
    Json(json!({"models": models, "token_usage": {"enabled": settings.token_usage_enabled}}))
}

/// The feature flags. This gateway has no agents API, browser control or MCP tasks.
async fn features(_user: CurrentUser) -> Json<Value> {
    Json(json!({
        "agents_api": {"enabled": false},
        "browser_control": {"enabled": false},
        "mcp_tasks": {"enabled": false},
    }))
}

/// No messaging channels are implemented.
async fn channel_providers(_user: CurrentUser) -> Json<Value> {
    Json(json!({"enabled": false, "providers": []}))
}

/// `{"skills": [{"name", "description", "license", "category", "enabled", "editable"}]}`: every
/// `<skills.path>/{public,custom}/<folder>/SKILL.md`, read now, sorted by category then name.
/// `enabled` comes from `<home>/extensions_config.json` (`{"skills": {"<name>": {"enabled":
/// bool}}}`, default true); custom skills are editable, public ones are not.
///
/// Every read is bounded (docs/gateway-contract.md §4.9): at most [`MAX_SKILLS`] folders per
/// category, symlinked folders and files skipped, only regular files read (a FIFO is never
/// waited on), and only the first [`MAX_SKILL_FILE_BYTES`] of a `SKILL.md` (the front matter is
/// at its top) and [`MAX_EXTENSIONS_BYTES`] of `extensions_config.json`.
async fn skills(
    State(settings): State<Arc<WebClientSettings>>,
    _user: CurrentUser,
) -> Result<Json<Value>, ApiError> {
    let root = settings.skills_dir.clone();
    let extensions = settings.extensions_config.clone();
    let skills = tokio::task::spawn_blocking(move || list_skills(&root, &extensions))
        .await
        .map_err(|err| ApiError::internal("listing skills", err))?;
    Ok(Json(json!({ "skills": skills })))
}

/// Skill folders read per category.
const MAX_SKILLS: usize = 500;
/// Bytes of one `SKILL.md` read.
const MAX_SKILL_FILE_BYTES: u64 = 64 * 1024;
/// Bytes of `extensions_config.json` read; a larger file is ignored.
const MAX_EXTENSIONS_BYTES: u64 = 1024 * 1024;

/// The first `limit` bytes of the regular file at `path` (invalid UTF-8 replaced), without
/// following a symlink in its place and without blocking on a FIFO; `None` for anything else.
fn read_regular_file(path: &Path, limit: u64) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn list_skills(root: &Path, extensions: &Path) -> Vec<Value> {
    let switches = read_regular_file(extensions, MAX_EXTENSIONS_BYTES + 1)
        .filter(|text| text.len() as u64 <= MAX_EXTENSIONS_BYTES)
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|config| config.get("skills").cloned())
        .unwrap_or(Value::Null);
    let mut skills = Vec::new();
    for category in ["public", "custom"] {
        let Ok(entries) = std::fs::read_dir(root.join(category)) else {
            continue;
        };
        // `file_type` does not follow symlinks: a linked folder is not a skill folder.
        let mut folders: Vec<_> = entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|entry| entry.path())
            .take(MAX_SKILLS)
            .collect();
        folders.sort();
        for folder in folders {
            let Some(text) = read_regular_file(&folder.join("SKILL.md"), MAX_SKILL_FILE_BYTES)
            else {
                continue;
            };
            let front = front_matter(&text);
            let folder_name = folder
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = front
                .get("name")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or(folder_name);
            let enabled = switches
                .pointer(&format!(
                    "/{}/enabled",
                    name.replace('~', "~0").replace('/', "~1")
                ))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            skills.push(json!({
                "name": name,
                "description": front.get("description").cloned().unwrap_or(json!("")),
                "license": front.get("license").cloned().unwrap_or(Value::Null),
                "category": category,
                "enabled": enabled,
                "editable": category == "custom",
            }));
        }
    }
    skills
}

/// The `key: value` lines of a SKILL.md front matter block (between the leading `---` lines).
/// Values are scalars with optional quotes; nested YAML is not read (skills use flat keys).
pub(super) fn front_matter(text: &str) -> Map<String, Value> {
    let mut keys = Map::new();
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return keys;
    }
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        if line.starts_with([' ', '\t', '-']) {
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            if !unquoted.is_empty() {
                keys.insert(key.trim().to_string(), Value::String(unquoted.to_string()));
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_reads_flat_scalar_keys_only() {
        let cases = [
            (
                "---\nname: pdf\ndescription: \"Read PDFs: text and tables\"\nlicense: 'MIT'\n---\n# body\nname: not-this",
                json!({"name": "pdf", "description": "Read PDFs: text and tables", "license": "MIT"}),
            ),
            ("no front matter\nname: x", json!({})),
            (
                "---\nname: nested\nmeta:\n  key: v\n---",
                json!({"name": "nested"}),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(Value::Object(front_matter(text)), expected, "{text}");
        }
    }
}
