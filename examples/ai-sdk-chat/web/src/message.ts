/**
 * The page's UI message type: `useChat`'s `UIMessage` with the route's one tool, `weather`
 * (server.mjs), so a `tool-weather` part's input and output are typed.
 */

import type { UIMessage } from "ai";

/** What the route's weather tool takes and answers (server.mjs's `forecast`). */
export type WeatherTool = {
  input: { city: string };
  output: { city: string; forecast: string; temperatureC: number };
};

/** A message of this chat. */
export type ChatMessage = UIMessage<unknown, never, { weather: WeatherTool }>;

/** One part of a message. */
export type ChatPart = ChatMessage["parts"][number];
