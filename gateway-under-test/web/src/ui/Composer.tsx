/** The message box: Enter sends, Shift+Enter starts a new line. */

import { useState, type FormEvent, type KeyboardEvent, type ReactNode } from "react";

export function Composer({
  disabled,
  onSend,
  pickers,
}: {
  disabled: boolean;
  onSend: (text: string) => void;
  pickers: ReactNode;
}) {
  const [text, setText] = useState("");
  const submit = () => {
    const trimmed = text.trim();
    if (trimmed === "" || disabled) return;
    onSend(trimmed);
    setText("");
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    submit();
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    }
  };
  return (
    <form className="composer" aria-label="Message composer" onSubmit={onSubmit}>
      <textarea
        aria-label="Message"
        placeholder="How can I assist you today?"
        value={text}
        rows={3}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="composer-bar">
        {pickers}
        <button type="submit" className="primary" disabled={disabled || text.trim() === ""}>
          Send
        </button>
      </div>
    </form>
  );
}
