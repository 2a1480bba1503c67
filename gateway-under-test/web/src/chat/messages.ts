/**
 * Message dumps as the gateway sends them (in `values` frames and in `messages/page` rows): the
 * few questions the chat view asks of one — its text, whether the UI hides it, which run it
 * belongs to — answered in one place.
 */

import type { Message } from "@langchain/langgraph-sdk";

export type { Message };

const MESSAGE_TYPES = new Set(["human", "ai", "tool", "system", "function", "remove"]);

/** The text of a message's content: the string, or its text blocks joined. */
export function messageText(content: Message["content"]): string {
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** Whether the chat view leaves the message out: system messages and `hide_from_ui` ones. */
export function isHidden(message: Message): boolean {
  if (message.type !== "human" && message.type !== "ai" && message.type !== "tool") return true;
  return message.additional_kwargs?.hide_from_ui === true;
}

/** The run a human message started, from the `run_id` the gateway stamps on it. */
export function stampedRunId(message: Message): string | null {
  const runId = message.additional_kwargs?.run_id;
  return typeof runId === "string" && runId !== "" ? runId : null;
}

/** `value` as a message dump, or `null` when it does not look like one. */
export function asMessage(value: unknown): Message | null {
  if (typeof value !== "object" || value === null) return null;
  const record = value as Record<string, unknown>;
  if (typeof record.type !== "string" || !MESSAGE_TYPES.has(record.type)) return null;
  if (typeof record.content !== "string" && !Array.isArray(record.content)) return null;
  return value as Message;
}
