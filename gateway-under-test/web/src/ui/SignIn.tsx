/** Sign in or create an account (the gateway then sets the session and CSRF cookies). */

import { useState, type FormEvent } from "react";

import { register, signIn } from "../api/gateway";

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const submitter = (event.nativeEvent as SubmitEvent).submitter;
    const creating = submitter instanceof HTMLButtonElement && submitter.value === "register";
    setPending(true);
    setError(null);
    (creating ? register(email, password).then(() => undefined) : signIn(email, password)).then(
      () => onSignedIn(),
      (failure: unknown) => {
        setPending(false);
        setError(failure instanceof Error ? failure.message : String(failure));
      },
    );
  };

  return (
    <main className="sign-in">
      <form aria-label="Sign in" onSubmit={submit}>
        <h1>Sign in to the gateway</h1>
        <label>
          Email
          <input type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            required
            minLength={8}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error !== null && <p role="alert">{error}</p>}
        <div className="sign-in-actions">
          <button type="submit" className="primary" value="sign-in" disabled={pending}>
            Sign in
          </button>
          <button type="submit" value="register" disabled={pending}>
            Create account
          </button>
        </div>
      </form>
    </main>
  );
}
