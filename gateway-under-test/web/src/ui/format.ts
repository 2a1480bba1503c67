/** Numbers and counts as the chat view words them. */

/** "Completed in 3.2 s" style seconds: one decimal under ten seconds, whole seconds above. */
export function formatSeconds(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds)} s`;
}

/** `count` with the noun, pluralised in English ("1 file", "3 files"). */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** A token count with thousands separators. */
export function formatTokens(tokens: number): string {
  return `${tokens.toLocaleString("en-US")} ${tokens === 1 ? "token" : "tokens"}`;
}
