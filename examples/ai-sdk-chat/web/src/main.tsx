/** Mounts the chat page. */

import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { Chat } from "./Chat";
import { restoreMessages } from "./storage";

const root = document.getElementById("root");
if (root === null) throw new Error("index.html has no #root");
createRoot(root).render(
  <StrictMode>
    <Chat initialMessages={restoreMessages()} />
  </StrictMode>,
);
