/**
 * The one place that decides what a chat run asks the gateway for. The browser suite compares
 * the request the page really sends with `runRequestBody`, the unit tests compare
 * `runRequestBody` with `run-requests/run-request.<mode>.json`, and the harness's recorder is meant
 * to send the same body (it can test against the same files), so a run recorded with
 * `cargo xtask record` replays in the browser without a miss.
 */

import { modeContext, type Mode, type ModeContext } from "./modes";

/** The graph every run starts. */
export const ASSISTANT_ID = "lead_agent";

/** The stream modes the chat view reads, in the order DeerFlow's client asks for them. */
export const RUN_STREAM_MODES = ["messages-tuple", "values", "updates", "custom"] as const;

/** DeerFlow's client raises the recursion limit to the gateway's maximum. */
export const RECURSION_LIMIT = 1000;

/** What varies from one run request to the next. */
export interface RunRequestInputs {
  prompt: string;
  mode: Mode;
  /** The model picked in the model picker; `null` leaves the choice to the gateway. */
  modelName: string | null;
  threadId: string;
}

/** The human message of a run's input: one text block, as DeerFlow's client sends it. */
export type HumanInputMessage = {
  type: "human";
  content: [{ type: "text"; text: string }];
  additional_kwargs: Record<string, never>;
};

/** The run's `input` (a type, not an interface: `submit` wants an index signature). */
export type RunInput = {
  messages: [HumanInputMessage];
};

/** The run's `context`: the mode's flags, the model and the thread. */
export type RunContext = ModeContext & { model_name?: string; thread_id: string };

/** Arguments for `useStream().submit` (and for `client.runs.stream`). */
export interface RunSubmission {
  input: RunInput;
  options: {
    config: { recursion_limit: number };
    context: RunContext;
    streamMode: (typeof RUN_STREAM_MODES)[number][];
    /** Said explicitly: the SDK would send `false` anyway, and the gateway accepts only that. */
    streamResumable: false;
    /** A closed tab must not cancel the run: its answer lands in the thread. */
    onDisconnect: "continue";
  };
}

/** The wire body of `POST /api/threads/{id}/runs/stream`. */
export interface RunRequestBody {
  input: RunInput;
  config: { recursion_limit: number };
  context: RunContext;
  stream_mode: string[];
  stream_resumable: false;
  assistant_id: string;
  on_disconnect: "continue";
}

/** The input message for `prompt`. */
export function humanInput(prompt: string): RunInput {
  return { messages: [{ type: "human", content: [{ type: "text", text: prompt }], additional_kwargs: {} }] };
}

/** The run context: model first, then the mode's flags, then the thread (DeerFlow's order). */
export function runContext(inputs: RunRequestInputs): RunContext {
  const context: RunContext = { ...modeContext(inputs.mode), thread_id: inputs.threadId };
  return inputs.modelName === null ? context : { model_name: inputs.modelName, ...context };
}

/** What the chat view passes to `useStream().submit`. */
export function runSubmission(inputs: RunRequestInputs): RunSubmission {
  return {
    input: humanInput(inputs.prompt),
    options: {
      config: { recursion_limit: RECURSION_LIMIT },
      context: runContext(inputs),
      streamMode: [...RUN_STREAM_MODES],
      streamResumable: false,
      onDisconnect: "continue",
    },
  };
}

/** The body the SDK sends for `runSubmission(inputs)`. */
export function runRequestBody(inputs: RunRequestInputs): RunRequestBody {
  const { input, options } = runSubmission(inputs);
  return {
    input,
    config: options.config,
    context: options.context,
    stream_mode: options.streamMode,
    stream_resumable: options.streamResumable,
    assistant_id: ASSISTANT_ID,
    on_disconnect: options.onDisconnect,
  };
}
