/**
 * The client's top level: who is signed in. An auth-disabled gateway answers `/auth/me` with its
 * synthetic user, and the client then opens straight into the workspace without a sign-in page.
 */

import { useCallback, useEffect, useState } from "react";

import { currentUser, signOut } from "../api/gateway";
import { isSyntheticUser, type GatewayUser } from "../auth/synthetic-user";
import { SignIn } from "./SignIn";
import { Workspace } from "./Workspace";

type Session =
  | { status: "loading" }
  | { status: "signed-out" }
  | { status: "signed-in"; user: GatewayUser }
  | { status: "failed"; message: string };

export function App() {
  const [session, setSession] = useState<Session>({ status: "loading" });
  const refresh = useCallback(() => {
    currentUser().then(
      (user) => setSession(user === null ? { status: "signed-out" } : { status: "signed-in", user }),
      (error: unknown) => setSession({ status: "failed", message: error instanceof Error ? error.message : String(error) }),
    );
  }, []);
  useEffect(refresh, [refresh]);

  const leave = () => {
    signOut().then(refresh, (error: unknown) => {
      setSession({ status: "failed", message: error instanceof Error ? error.message : String(error) });
    });
  };

  switch (session.status) {
    case "loading":
      return <p role="status">Connecting to the gateway…</p>;
    case "failed":
      return (
        <main className="sign-in">
          <p role="alert">The gateway could not be reached: {session.message}</p>
          <button type="button" onClick={refresh}>
            Try again
          </button>
        </main>
      );
    case "signed-out":
      return <SignIn onSignedIn={refresh} />;
    case "signed-in":
      return <Workspace user={session.user} authDisabled={isSyntheticUser(session.user)} onSignOut={leave} />;
  }
}
