/**
 * One run in the conversation: the person's message, the assistant's answers (markdown), each
 * tool call as a step with its arguments and result, the gateway's error fallback as an error,
 * and a footer with the duration, the token count and the files the run edited.
 */

import { memo } from "react";
import Markdown from "react-markdown";

import type { WorkspaceChanges } from "../api/gateway";
import type { AiItem, RunItem, RunView, ToolStep } from "../chat/conversation";
import { formatSeconds, formatTokens, plural } from "./format";

/**
 * A message's markdown, parsed again only when its text changes: a streamed chunk rebuilds every
 * run's view objects, but only the message that grows has new text.
 */
const MarkdownText = memo(function MarkdownText({ text }: { text: string }) {
  return <Markdown>{text}</Markdown>;
});

function argumentText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function ToolStepView({ step }: { step: ToolStep }) {
  const description = typeof step.args.description === "string" ? step.args.description : null;
  const args = Object.entries(step.args).filter(([name]) => name !== "description");
  return (
    <details className={`step step-${step.status}`} open aria-label={`Tool call: ${step.name}`}>
      <summary>
        <span className="step-name">{step.name}</span>
        {description !== null && <span className="step-description">{description}</span>}
        <span className="step-status">{step.status === "running" ? "running…" : step.status}</span>
      </summary>
      {args.length > 0 && (
        <dl className="step-args" aria-label="Arguments">
          {args.map(([name, value]) => (
            <div key={name}>
              <dt>{name}</dt>
              <dd>
                <code>{argumentText(value)}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
      {step.result !== null && (
        <pre className="step-result" aria-label="Result">
          {step.result}
        </pre>
      )}
    </details>
  );
}

function AiItemView({ item }: { item: AiItem }) {
  if (item.failure !== null) {
    return (
      <div className="message message-error" role="alert" aria-label="Model error">
        <strong>The model call failed{item.failure.type !== null ? ` (${item.failure.type})` : ""}.</strong>
        <p>{item.text}</p>
      </div>
    );
  }
  return (
    <article className="message message-ai" aria-label="Assistant">
      <MarkdownText text={item.text} />
    </article>
  );
}

function ItemView({ item }: { item: RunItem }) {
  switch (item.kind) {
    case "human":
      return (
        <article className="message message-human" aria-label="You">
          <MarkdownText text={item.text} />
        </article>
      );
    case "ai":
      return <AiItemView item={item} />;
    case "tool":
      return <ToolStepView step={item} />;
  }
}

function EditedFiles({ changes }: { changes: WorkspaceChanges }) {
  const { created, modified, deleted } = changes.summary;
  const count = created + modified + deleted;
  if (!changes.available || count === 0) return null;
  return (
    <section className="edited-files" aria-label="Edited files">
      <h2>Edited {plural(count, "file")}</h2>
      <ul>
        {changes.files.map((file) => (
          <li key={file.path}>
            <code>{file.path}</code> <span className="file-status">{file.status}</span>{" "}
            <span className="additions">+{file.additions}</span> <span className="deletions">−{file.deletions}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A run of the conversation; `changes` is what it did to the workspace, once known. */
export function RunBlock({
  run,
  running,
  changes,
}: {
  run: RunView;
  running: boolean;
  changes: WorkspaceChanges | "failed" | undefined;
}) {
  return (
    <section className="run" aria-label="Run">
      {run.items.map((item) => (
        <ItemView key={item.key} item={item} />
      ))}
      {!running && (run.durationSeconds !== null || run.totalTokens !== null) && (
        <footer className="run-footer" aria-label="Run summary">
          {run.durationSeconds !== null && <span>Completed in {formatSeconds(run.durationSeconds)}</span>}
          {run.totalTokens !== null && <span>{formatTokens(run.totalTokens)}</span>}
        </footer>
      )}
      {changes !== undefined && changes !== "failed" && <EditedFiles changes={changes} />}
    </section>
  );
}
