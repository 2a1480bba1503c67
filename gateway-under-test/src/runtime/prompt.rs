//! The lead agent's system prompt, assembled from the configuration and the run's mode.
//!
//! It is sent to the model but is never part of a replay key, so it is free to evolve.

use crate::models::ToolSpec;
use crate::runtime::flags::RunFlags;

/// What the prompt is assembled from.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// The tools bound to this run.
    pub tools: &'a [ToolSpec],
    /// The run-context flags (plan mode, subagents, thinking).
    pub flags: &'a RunFlags,
    /// Skill names found in the skills folder.
    pub skills: &'a [String],
    /// Where the sandbox sees the skills.
    pub skills_container_path: &'a str,
}

/// Builds the system prompt.
pub fn system_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut prompt = String::from(
        "You are DeerFlow, an open-source super agent. You help the user by planning, using tools, \
         and answering precisely.\n\n\
         <working_directory>\n\
         - /mnt/user-data/workspace: your scratch space for intermediate files.\n\
         - /mnt/user-data/uploads: files the user uploaded (read them, do not modify them).\n\
         - /mnt/user-data/outputs: deliverables for the user. Save final files here.\n\
         </working_directory>\n\n",
    );
    prompt.push_str("<tools>\n");
    for tool in inputs.tools {
        prompt.push_str(&format!("- {}: {}\n", tool.name, tool.description));
    }
    prompt.push_str("</tools>\n\n");
    prompt.push_str(
        "<file_editing_workflow>\nRead a file before you modify it: any write invalidates earlier \
         reads, so re-read before every modification.\n</file_editing_workflow>\n\n",
    );
    if inputs.flags.is_plan_mode() {
        prompt.push_str(
            "<plan_mode>\nBefore acting on a multi-step task, write a short numbered plan, then \
             follow it and keep it up to date.\n</plan_mode>\n\n",
        );
    }
    if inputs.flags.subagent_enabled() {
        prompt.push_str(
            "<subagents>\nDelegation to subagents is allowed when a task splits into independent \
             parts, but do simple tasks yourself.\n</subagents>\n\n",
        );
    }
    if inputs.flags.thinking_enabled() {
        prompt.push_str("<thinking>\nThink step by step before answering.\n</thinking>\n\n");
    }
    prompt.push_str(&format!(
        "<skills path=\"{}\">\n",
        inputs.skills_container_path
    ));
    if inputs.skills.is_empty() {
        prompt.push_str("(no skills installed)\n");
    }
    for skill in inputs.skills {
        prompt.push_str(&format!("- {skill}\n"));
    }
    prompt.push_str("</skills>\n\nAnswer in the language the user writes in.");
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_prompt_follows_mode_and_tools() {
        let tools = [ToolSpec {
            name: "ls".into(),
            description: "List a directory".into(),
            parameters: json!({}),
        }];
        let flash = RunFlags::from_context(Some(&json!({"mode": "flash"})));
        let ultra = RunFlags::from_context(Some(&json!({"mode": "ultra"})));
        let inputs = |flags| PromptInputs {
            tools: &tools,
            flags,
            skills: &[],
            skills_container_path: "/mnt/skills",
        };
        let flash_prompt = system_prompt(&inputs(&flash));
        let ultra_prompt = system_prompt(&inputs(&ultra));
        assert!(flash_prompt.contains("- ls: List a directory"));
        assert!(!flash_prompt.contains("<plan_mode>") && ultra_prompt.contains("<plan_mode>"));
        assert!(ultra_prompt.contains("<subagents>") && ultra_prompt.contains("<thinking>"));
    }
}
