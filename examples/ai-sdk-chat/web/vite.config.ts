/**
 * Vite builds the page into `dist/`, which the chat route serves at `/` (server.mjs, with
 * STATIC_DIR=dist as keyless.toml starts it), so page and route share one origin.
 */

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  plugins: [react()],
  build: { target: "es2022", sourcemap: true },
});
