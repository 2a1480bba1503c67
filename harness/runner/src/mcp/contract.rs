//! The MCP servers' contract, golden like the gateway's stream (`<fixture>.mcp.snap`): what
//! each server's recorded `tools/list` (and `prompts/list`, `resources/list`) returned,
//! reduced to a shape: each tool's name and its input schema's property names, types and
//! required list; each prompt's name and arguments; each resource's URI. A server that renamed
//! a tool or a parameter changes the shape, and the build turns red even when the model replay
//! would still pass. Descriptions are left out: rewording one changes no contract.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use replay_core::{BoundaryKind, Exchange};

use super::message::{McpAnswer, Outcome};

/// The shape of every MCP server's recorded lists in `exchanges`, by server name then list
/// (`tools`, `prompts`, `resources`), each entry by name; `None` when no list was recorded.
/// A list recorded several times (one per session, pages of a cursor) is the union of its
/// entries.
pub fn contract_shape(exchanges: &[Exchange]) -> Option<Value> {
    let mut servers: BTreeMap<&str, BTreeMap<&'static str, Map<String, Value>>> = BTreeMap::new();
    for exchange in exchanges.iter().filter(|e| e.boundary == BoundaryKind::Mcp) {
        let (list, entry_key): (&'static str, &str) = match exchange.label.as_str() {
            "tools/list" => ("tools", "name"),
            "prompts/list" => ("prompts", "name"),
            "resources/list" => ("resources", "uri"),
            _ => continue,
        };
        let Ok(McpAnswer {
            response: Outcome::Result(result),
            ..
        }) = McpAnswer::from_value(&exchange.answer)
        else {
            continue;
        };
        let entries = servers
            .entry(exchange.caller.as_str())
            .or_default()
            .entry(list)
            .or_default();
        for entry in result
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = entry.get(entry_key).and_then(Value::as_str) else {
                continue;
            };
            entries.insert(name.to_owned(), shape_of(list, entry));
        }
    }
    if servers.is_empty() {
        return None;
    }
    Some(serde_json::to_value(servers).unwrap_or(Value::Null))
}

fn shape_of(list: &str, entry: &Value) -> Value {
    match list {
        "tools" => {
            let schema = entry.get("inputSchema").unwrap_or(&Value::Null);
            json!({
                "properties": properties(schema),
                "required": schema.get("required").cloned().unwrap_or(json!([])),
            })
        }
        "prompts" => {
            let arguments: Map<String, Value> = (entry.get("arguments").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(|argument| {
                    let name = argument.get("name")?.as_str()?;
                    let required = argument.get("required").and_then(Value::as_bool);
                    Some((
                        name.to_owned(),
                        json!({"required": required.unwrap_or(false)}),
                    ))
                })
                .collect();
            json!({"arguments": arguments})
        }
        _ => json!({"mimeType": entry.get("mimeType").cloned().unwrap_or(Value::Null)}),
    }
}

/// Each property's name and type (`anyOf` types joined with `|`; a nested object's own
/// properties below it).
fn properties(schema: &Value) -> Value {
    let fields: Map<String, Value> = (schema.get("properties").and_then(Value::as_object))
        .into_iter()
        .flatten()
        .map(|(name, property)| (name.clone(), type_of(property)))
        .collect();
    Value::Object(fields)
}

fn type_of(property: &Value) -> Value {
    if let Some(options) = property.get("anyOf").and_then(Value::as_array) {
        let types: Vec<String> = (options.iter())
            .map(|option| match type_of(option) {
                Value::String(name) => name,
                other => other.to_string(),
            })
            .collect();
        return json!(types.join("|"));
    }
    let name = match property.get("type") {
        Some(Value::String(name)) => name.clone(),
        Some(Value::Array(names)) => (names.iter())
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if property.get("$ref").is_some() => "ref".to_owned(),
        _ => "any".to_owned(),
    };
    if name == "object" && property.get("properties").is_some() {
        return json!({"object": properties(property)});
    }
    if name == "array"
        && let Some(items) = property.get("items")
    {
        return json!({"array": type_of(items)});
    }
    json!(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::message::{AnswerForm, McpBoundary, McpCall};

    fn listed(server: &str, tools: Value) -> Exchange {
        let boundary = McpBoundary {
            server: server.to_owned(),
        };
        let call = McpCall {
            id: json!(1),
            method: "tools/list".to_owned(),
            params: None,
        };
        let answer = McpAnswer {
            form: AnswerForm::Json,
            before: Vec::new(),
            response: Outcome::Result(json!({"tools": tools})),
            status: None,
        };
        boundary.call(&call).answered(answer.to_value())
    }

    #[test]
    fn the_shape_keeps_names_types_and_required_and_drops_descriptions() {
        let tool = |name: &str, field: &str, description: &str| {
            json!([{"name": name, "description": description, "inputSchema": {
                "type": "object",
                "properties": {field: {"type": "string", "description": description},
                    "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                "required": [field]}}])
        };
        let shape = |tools: Value| contract_shape(&[listed("time", tools)]);
        let base = shape(tool("get_time", "city", "a"));
        assert_eq!(
            base,
            Some(json!({"time": {"tools": {"get_time": {
                "properties": {"city": "string", "limit": "integer|null"},
                "required": ["city"]}}}}))
        );
        assert_eq!(base, shape(tool("get_time", "city", "reworded")));
        assert_ne!(base, shape(tool("get_clock", "city", "a")));
        assert_ne!(base, shape(tool("get_time", "town", "a")));
        assert_eq!(contract_shape(&[]), None);
    }
}
