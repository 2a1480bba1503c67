/**
 * The conversation kept across a reload: the messages `useChat` holds, saved to `localStorage`
 * whenever a turn has finished, and given back to `useChat` as its initial messages. A follow-up
 * after a reload therefore sends the route the restored conversation, which must be what the live
 * one was for the model call to be the same.
 */

import type { ChatMessage } from "./message";

const KEY = "ai-sdk-chat:messages";

/** The saved conversation, or none (nothing saved, or not a list). */
export function restoreMessages(): ChatMessage[] {
  const saved = localStorage.getItem(KEY);
  if (saved === null) return [];
  const parsed: unknown = JSON.parse(saved);
  return Array.isArray(parsed) ? (parsed as ChatMessage[]) : [];
}

/** Saves the conversation. */
export function saveMessages(messages: ChatMessage[]): void {
  localStorage.setItem(KEY, JSON.stringify(messages));
}

/** Forgets the conversation. */
export function clearMessages(): void {
  localStorage.removeItem(KEY);
}
