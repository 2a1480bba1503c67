//! The run-context flags a run request sets (`docs/gateway-contract.md` §4.3): the kept `context`
//! keys and the mode's table. They sit below the agent, its prompt and the run context, which
//! all read them, so none of those imports another to reach them.

use serde_json::{Map, Value};

/// The run `context` keys that reach the runtime (`docs/gateway-contract.md` §4.3); every other key
/// is ignored.
pub const CONTEXT_KEYS: [&str; 10] = [
    "model_name",
    "mode",
    "thinking_enabled",
    "reasoning_effort",
    "is_plan_mode",
    "subagent_enabled",
    "max_concurrent_subagents",
    "max_total_subagents",
    "agent_name",
    "is_bootstrap",
];

/// The run-context flags, as copied into `config.configurable` and `config.context`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFlags {
    /// The kept context keys, in request order.
    pub values: Map<String, Value>,
}

impl RunFlags {
    /// Keeps only [`CONTEXT_KEYS`] from a request's `context`, then fills the mode's flags
    /// (§4.3's table) for any that the request left out.
    pub fn from_context(context: Option<&Value>) -> RunFlags {
        let mut values = Map::new();
        if let Some(Value::Object(object)) = context {
            for (key, value) in object {
                if CONTEXT_KEYS.contains(&key.as_str()) {
                    values.insert(key.clone(), value.clone());
                }
            }
        }
        let mode_flags = match values.get("mode").and_then(Value::as_str) {
            Some("flash") => Some((false, false, false)),
            Some("thinking") => Some((true, false, false)),
            Some("pro") => Some((true, true, false)),
            Some("ultra") => Some((true, true, true)),
            _ => None,
        };
        if let Some((thinking, plan, subagent)) = mode_flags {
            for (key, flag) in [
                ("thinking_enabled", thinking),
                ("is_plan_mode", plan),
                ("subagent_enabled", subagent),
            ] {
                values.entry(key).or_insert(Value::Bool(flag));
            }
        }
        RunFlags { values }
    }

    fn flag(&self, key: &str) -> bool {
        self.values
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `thinking_enabled`.
    pub fn thinking_enabled(&self) -> bool {
        self.flag("thinking_enabled")
    }

    /// `is_plan_mode`.
    pub fn is_plan_mode(&self) -> bool {
        self.flag("is_plan_mode")
    }

    /// `subagent_enabled`.
    pub fn subagent_enabled(&self) -> bool {
        self.flag("subagent_enabled")
    }

    /// `model_name`, when the request chose a model.
    pub fn model_name(&self) -> Option<&str> {
        self.values.get("model_name").and_then(Value::as_str)
    }

    /// `reasoning_effort`, when given.
    pub fn reasoning_effort(&self) -> Option<String> {
        self.values
            .get("reasoning_effort")
            .and_then(Value::as_str)
            .map(String::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn context_keeps_only_the_listed_keys_and_fills_mode_flags() {
        let flags = RunFlags::from_context(Some(&json!({
            "mode": "pro", "is_bootstrap": false, "secret_sauce": 1, "thinking_enabled": false
        })));
        assert!(!flags.values.contains_key("secret_sauce"));
        assert!(
            !flags.thinking_enabled(),
            "an explicit flag wins over the mode table"
        );
        assert!(flags.is_plan_mode());
        assert!(!flags.subagent_enabled());
    }

    #[test]
    fn each_ui_mode_maps_to_the_contract_table() {
        let table = [
            ("flash", (false, false, false)),
            ("thinking", (true, false, false)),
            ("pro", (true, true, false)),
            ("ultra", (true, true, true)),
        ];
        for (mode, (thinking, plan, subagent)) in table {
            let flags = RunFlags::from_context(Some(&json!({ "mode": mode })));
            assert_eq!(
                (
                    flags.thinking_enabled(),
                    flags.is_plan_mode(),
                    flags.subagent_enabled()
                ),
                (thinking, plan, subagent),
                "{mode}"
            );
        }
    }
}
