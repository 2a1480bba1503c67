/**
 * Vite builds the client into `dist/`, which the gateway serves from `server.web_dir`. For
 * development, `npm run dev` (and `npm run preview`) proxy `/api` and `/health` to a gateway at
 * `GATEWAY_URL` (default `http://127.0.0.1:8011`, where `cargo xtask replay-gateway` listens), so
 * the page and the API share one origin and the cookie session and CSRF work as in production.
 * The proxy keeps the browser's Host header, so the gateway's Origin check sees its own origin.
 */

import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

const gateway = process.env.GATEWAY_URL ?? "http://127.0.0.1:8011";
const proxy = { "/api": { target: gateway }, "/health": { target: gateway } };

export default defineConfig({
  plugins: [react()],
  server: { host: "127.0.0.1", proxy },
  preview: { host: "127.0.0.1", proxy },
  // The SDK brings @langchain/core along (about 240 kB gzipped in all); one chunk served from the
  // gateway's own origin loads in a few hundred milliseconds, so the default 500 kB warning is noise.
  build: { target: "es2022", sourcemap: true, chunkSizeWarningLimit: 1000 },
  test: { include: ["src/**/*.test.ts", "tests/**/*.test.ts"], environment: "node" },
});
