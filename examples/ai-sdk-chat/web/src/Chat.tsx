/**
 * The chat page: `useChat` with its default transport (`DefaultChatTransport` posting to
 * `/api/chat`, the route in server.mjs), each message rendered part by part in the order the
 * stream made them: text, the weather tool's call (its state, the city it was asked for, its
 * output) and the boundary of each step of the tool loop. The `data-*` attributes name what the
 * browser suite reads.
 */

import { useChat } from "@ai-sdk/react";
import { useEffect, useState, type FormEvent } from "react";

import type { ChatMessage, ChatPart } from "./message";
import { clearMessages, saveMessages } from "./storage";

/** One part as the page shows it; a part type the page does not know is shown by its type. */
function Part({ part, step }: { part: ChatPart; step: number }) {
  switch (part.type) {
    case "text":
      // The first step of a tool call opens a text part it never fills: nothing to show.
      return part.text === "" ? null : <p data-part="text">{part.text}</p>;
    case "step-start":
      return (
        <div data-part="step" className="step">
          step {step}
        </div>
      );
    case "tool-weather":
      return (
        <div data-part="tool-weather" data-state={part.state} className="tool">
          <span>weather</span> <span data-field="city">{part.input?.city ?? "…"}</span>
          {part.state === "output-available" && (
            <span data-field="output">
              : {part.output.forecast}, {part.output.temperatureC} °C
            </span>
          )}
          {part.state === "output-error" && <span data-field="error">: {part.errorText}</span>}
        </div>
      );
    default:
      return <div data-part={part.type}>[{part.type}]</div>;
  }
}

/** A message and its parts, each step numbered from 1. */
function Message({ message }: { message: ChatMessage }) {
  // The step each part belongs to: the count of step boundaries up to it.
  const steps = message.parts.map(
    (_, index) => message.parts.slice(0, index + 1).filter((part) => part.type === "step-start").length,
  );
  return (
    <li data-role={message.role} className={`message ${message.role}`}>
      <strong>{message.role === "user" ? "You" : "Assistant"}</strong>
      {message.parts.map((part, index) => (
        <Part key={index} part={part} step={steps[index] ?? 0} />
      ))}
    </li>
  );
}

/** The chat: the conversation, a form to send the next message, the request's status. */
export function Chat({ initialMessages }: { initialMessages: ChatMessage[] }) {
  const { messages, sendMessage, setMessages, status, error } = useChat<ChatMessage>({
    messages: initialMessages,
  });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";

  useEffect(() => {
    if (status === "ready") saveMessages(messages);
  }, [status, messages]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const text = input.trim();
    if (text === "" || busy) return;
    setInput("");
    void sendMessage({ text });
  };

  return (
    <main>
      <h1>Weather chat</h1>
      <ol aria-label="Conversation" className="conversation">
        {messages.map((message) => (
          <Message key={message.id} message={message} />
        ))}
      </ol>
      {error !== undefined && <p role="alert">{error.message}</p>}
      <form onSubmit={submit}>
        <input
          aria-label="Message"
          value={input}
          placeholder="Ask about the weather in a city"
          onChange={(event) => setInput(event.target.value)}
        />
        <button type="submit" disabled={busy}>
          Send
        </button>
        <button
          type="button"
          disabled={busy}
          onClick={() => {
            clearMessages();
            setMessages([]);
          }}
        >
          New chat
        </button>
      </form>
      <p data-testid="status">{status}</p>
    </main>
  );
}
